package jetstream

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// On a three-node cluster with every stream at three replicas: a writer's
// back-to-back commits and renewals never conflict with themselves, racing
// writers still land exactly one batch, and when the runs stream's leader
// is killed, commits fail with ErrUnavailable until a new leader is
// elected, then the writer's retry at its frontier lands, and nothing
// acknowledged is lost; a world read right after each write sees it.
func TestClusterLeaderLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	start := time.Now()
	c := natstest.StartCluster(t, 3)
	t.Logf("3-node cluster up with a meta leader in %v", time.Since(start).Round(time.Millisecond))
	nc, err := Connect(c.URLs(), nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1))
	must(t, err)
	t.Cleanup(nc.Close)
	start = time.Now()
	st := openOn(t, nc, Options{Replicas: 3})
	t.Logf("store (2 streams, 3 buckets, R3) created in %v", time.Since(start).Round(time.Millisecond))

	// One writer committing back to back: the leader acks a batch before
	// it clears the subject's in-flight mark, so the next commit can be
	// refused with 10164 by the writer's own previous one; Commit repeats
	// it. Same for lease renewals.
	var seqAt Frontier
	for i := range 200 {
		r, err := st.Ledger.Commit(ctx(t), "seq", seqAt, records(strconv.Itoa(i), 2, 100), []byte("ck"))
		if err != nil {
			t.Fatalf("sequential commit %d: %v", i, err)
		}
		seqAt = r.Frontier
	}
	ls, err := st.Leases.Acquire(ctx(t), "seq", []byte("w"))
	must(t, err)
	for i := range 100 {
		if ls, err = st.Leases.Renew(ctx(t), ls); err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
	}

	c0, err := st.Ledger.Commit(ctx(t), run, Frontier{}, records("c0", 10, 300), []byte("ck0"))
	must(t, err)

	// Racing writers on their own connections.
	const writers = 3
	ledgers := make([]*Ledger, writers)
	for i := range ledgers {
		ledgers[i] = openOn(t, natstest.Connect(t, c.Servers[i].ClientURL()), Options{Replicas: 3}).Ledger
	}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	res := make([]Committed, writers)
	for i, l := range ledgers {
		wg.Go(func() {
			res[i], errs[i] = l.Commit(ctx(t), run, c0.Frontier, records("w"+strconv.Itoa(i), 10, 300), []byte("ck"+strconv.Itoa(i)))
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("writers %d and %d both committed", winner, i)
			}
			winner = i
			continue
		}
		wantErr(t, err, ErrConflict)
	}
	if winner < 0 {
		t.Fatalf("nobody committed: %v", errs)
	}
	at := res[winner].Frontier
	want := append(records("c0", 10, 300), records("w"+strconv.Itoa(winner), 10, 300)...)

	// A world is read from the stream's leader: each write acknowledged
	// is there at once, never lagging as a replica's direct get may.
	for i := range 50 {
		data := "v" + strconv.Itoa(i)
		must(t, upload(st.Worlds, run, "f", []byte(data), false, at.Ledger))
		ws, err := st.Worlds.Read(ctx(t), run)
		must(t, err)
		if got := string(ws.Files["f"]); got != data {
			t.Fatalf("world read right after write %d: %q, want %q", i, got, data)
		}
	}

	// Kill the runs stream's leader.
	js, err := natsjs.New(nc)
	must(t, err)
	s, err := js.Stream(ctx(t), testNames.RunsStream())
	must(t, err)
	leader := s.CachedInfo().Cluster.Leader
	for _, srv := range c.Servers {
		if srv.Name() == leader {
			srv.Shutdown()
		}
	}
	killed := time.Now()
	recs := records("after", 10, 300)
	var unavailable int
	for {
		r, err := st.Ledger.Commit(short(t), run, at, recs, []byte("ck after"))
		if err == nil {
			t.Logf("leader %s killed: commit landed after %v and %d ErrUnavailable (duplicate %v)",
				leader, time.Since(killed).Round(time.Millisecond), unavailable, r.Duplicate)
			break
		}
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("commit after leader loss: %v", err)
		}
		unavailable++
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("no new leader: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A direct get may be answered by a replica that has not applied the
	// commit yet: what was acknowledged must appear, and soon.
	all := append(want, recs...)
	got := readAll(t, st.Ledger, run, 0)
	for deadline := time.Now().Add(10 * time.Second); len(got) < len(all) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		got = readAll(t, st.Ledger, run, 0)
	}
	sameData(t, got, all)
	ck, _, err := st.Ledger.Checkpoint(ctx(t), run)
	must(t, err)
	if string(ck) != "ck after" {
		t.Fatalf("checkpoint %q", ck)
	}
}
