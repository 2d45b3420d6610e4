package runstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/dirstore"
)

// TestInitForceArchivesTheOldRun: init --force moves the old run, whole
// (manifest, checkpoint, ledger, sandbox world and keys, inbox), to
// archive/<time>/, where acr can still read it, and says where.
func TestInitForceArchivesTheOldRun(t *testing.T) {
	dir := quickRun(t, 3)
	before := treeOf(t, dir)
	c, err := Init(t.Context(), dir, quickstart(t), "run:new", true, testOptions())
	require.NoError(t, err)
	require.Equal(t, "run:new", c.State.Run.RunID)
	require.True(t, strings.HasPrefix(c.Archive, ArchiveDir+"/"), c.Archive)
	archived := filepath.Join(dir, filepath.FromSlash(c.Archive))
	for p, content := range before {
		rel, err := filepath.Rel(dir, strings.TrimSuffix(p, "/"))
		require.NoError(t, err)
		if rel == "." || rel == dirstore.LockName {
			continue
		}
		moved := filepath.Join(archived, rel)
		if strings.HasSuffix(p, "/") {
			assert.DirExists(t, moved)
			continue
		}
		b, err := os.ReadFile(moved)
		require.NoError(t, err, rel)
		assert.Equal(t, content, string(b), rel)
	}
	st, _, err := ReadState(archived)
	require.NoError(t, err, "the archived run is a state directory acr can read")
	assert.Equal(t, "run:test", st.Run.RunID)
	st, _, err = ReadState(dir)
	require.NoError(t, err)
	assert.Equal(t, "run:new", st.Run.RunID)
	_, err = os.Stat(filepath.Join(dir, stagingDir))
	assert.True(t, os.IsNotExist(err))

	// A second replacement in the same second gets its own archive.
	c2, err := Init(t.Context(), dir, quickstart(t), "run:third", true, testOptions())
	require.NoError(t, err)
	assert.NotEqual(t, c.Archive, c2.Archive)
}

// TestInitRefusesUnbuildableWorldUpFront: an environment that passes its
// own validation but cannot be created is refused before anything is
// written: with --force the old run stays, without it no directory is
// created.
func TestInitRefusesUnbuildableWorldUpFront(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"reserved":  {".acr-tmp-x": "x"},
		"long name": {strings.Repeat("n", 300): "x"},
		"file/dir":  {"a": "x", "a/b": "y"},
	} {
		t.Run(name, func(t *testing.T) {
			in := quickstart(t)
			in.Spec.Files = files
			dir := quickRun(t, 1)
			before := treeOf(t, dir)
			_, err := Init(t.Context(), dir, in, "run:new", true, testOptions())
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, before, treeOf(t, dir))

			fresh := filepath.Join(t.TempDir(), "a", "b")
			_, err = Init(t.Context(), fresh, in, "", false, testOptions())
			require.ErrorAs(t, err, &ve)
			assert.NoDirExists(t, filepath.Dir(fresh))
		})
	}
}

// TestFailedInitLeavesNoDirectory: a build that fails part-way (here the
// staging directory's path is too long for the file system) removes what
// it made, the state directory included when init created it.
func TestFailedInitLeavesNoDirectory(t *testing.T) {
	root := t.TempDir()
	dir := root
	for len(dir) < 4086 {
		dir = filepath.Join(dir, strings.Repeat("d", min(200, 4086-len(dir)-1)))
	}
	require.LessOrEqual(t, len(dir), 4090)
	_, err := Init(t.Context(), dir, quickstart(t), "", false, testOptions())
	require.Error(t, err)
	assert.Contains(t, err.Error(), stagingDir, "the failure is in the build, after the directory was made")
	es, err := os.ReadDir(root)
	require.NoError(t, err)
	assert.Empty(t, es, "init removed the directories it created")
}

func TestReadInputsAcceptsSchemaKey(t *testing.T) {
	root := filepath.Join("..", "..", "scenarios", "quickstart")
	tmp := t.TempDir()
	paths := map[string]string{}
	for _, name := range []string{"goal", "contract", "environment"} {
		b, err := os.ReadFile(filepath.Join(root, name+".json"))
		require.NoError(t, err)
		withKey := strings.Replace(string(b), "{", `{"$schema": "https://acr.dev/schemas/`+name+`.schema.json",`, 1)
		paths[name] = filepath.Join(tmp, name+".json")
		require.NoError(t, os.WriteFile(paths[name], []byte(withKey), 0o644))
	}
	got, err := ReadInputs(paths["goal"], paths["contract"], paths["environment"])
	require.NoError(t, err)
	want := quickstart(t)
	want.EnvFile, want.ContractFile = paths["environment"], paths["contract"]
	assert.Equal(t, want, got, "the $schema key is not part of the document")

	b, _ := os.ReadFile(paths["goal"])
	require.NoError(t, os.WriteFile(paths["goal"], []byte(strings.Replace(string(b), `"$schema": "`, `"$schema": 1, "x": "`, 1)), 0o644))
	_, err = ReadInputs(paths["goal"], paths["contract"], paths["environment"])
	var ve *ValidationError
	require.ErrorAs(t, err, &ve, "a $schema that is not a string is not the editors' key")
	assert.Equal(t, "$schema", ve.Field)
}

func TestReadInputsRefusesUnbuildableWorld(t *testing.T) {
	root := filepath.Join("..", "..", "scenarios", "quickstart")
	env := filepath.Join(t.TempDir(), "env.json")
	require.NoError(t, os.WriteFile(env, []byte(`{"schema":"acr.environment/v0.1","files":{".acr-tmp-x":"x"},"checks":[]}`), 0o644))
	_, err := ReadInputs(filepath.Join(root, "goal.json"), filepath.Join(root, "contract.json"), env)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, env, ve.File)
	assert.Equal(t, "files..acr-tmp-x", ve.Field)
}
