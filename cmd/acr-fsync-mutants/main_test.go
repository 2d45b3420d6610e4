package main

import (
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `package x

func (s *Store) Commit() error {
	if err := s.fsys.SyncDir("checkpoint"); err != nil {
		return err
	}
	f.Sync()
	if err := disk.ReplaceFile(s.fsys, "m", b); err != nil {
		return err
	}
	_ = s.fsys.WriteFile("p", data)
	_ = os.WriteFile("p", data, 0o644)
	_ = syncPath(dir)
	f.Sync()
	_ = disk.Fsync(f)
	_ = Fsync(g)
	return w.syncDir(d)
}
`

func TestSitesIn(t *testing.T) {
	sites, err := sitesIn("internal/x/x.go", []byte(sample))
	require.NoError(t, err)
	var ids, repl []string
	for _, s := range sites {
		ids = append(ids, s.ID)
		repl = append(repl, s.Repl)
		mut := sample[:s.Start] + s.Repl + sample[s.End:]
		_, err := parser.ParseFile(token.NewFileSet(), "m.go", mut, 0)
		assert.NoError(t, err, "the mutant of %s parses", s.ID)
	}
	assert.Equal(t, []string{
		`internal/x/x.go Store.Commit s.fsys.SyncDir("checkpoint")`,
		`internal/x/x.go Store.Commit f.Sync()`,
		`internal/x/x.go Store.Commit disk.ReplaceFile(s.fsys, "m", b)`,
		`internal/x/x.go Store.Commit s.fsys.WriteFile("p", data)`,
		`internal/x/x.go Store.Commit syncPath(dir)`,
		`internal/x/x.go Store.Commit f.Sync() #2`,
		`internal/x/x.go Store.Commit disk.Fsync(f)`,
		`internal/x/x.go Store.Commit Fsync(g)`,
		`internal/x/x.go Store.Commit w.syncDir(d)`,
	}, ids, "os.WriteFile is not a disk.FS write")
	assert.Equal(t, []string{
		`func(...any) error { return nil }(s.fsys, "checkpoint")`,
		`func(...any) error { return nil }(f)`,
		`(s.fsys).WriteFile("m", b)`,
		`s.fsys.WriteCache("p", data)`,
		`func(...any) error { return nil }(dir)`,
		`func(...any) error { return nil }(f)`,
		`func(...any) error { return nil }(f)`,
		`func(...any) error { return nil }(g)`,
		`func(...any) error { return nil }(w, d)`,
	}, repl)
}

// TestSitesOfThisTree: the real tree has fsync sites, and every allowed
// entry names one of them.
func TestSitesOfThisTree(t *testing.T) {
	sites, err := findSites("../..")
	require.NoError(t, err)
	require.Greater(t, len(sites), 20)
	present := map[string]bool{}
	for _, s := range sites {
		present[s.ID] = true
	}
	for id := range allowed {
		assert.True(t, present[id], "allowed entry %q names no fsync site", id)
	}
}
