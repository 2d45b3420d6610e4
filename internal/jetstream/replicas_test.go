package jetstream

import (
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// replicas returns the replica count of each of the store's streams and
// buckets.
func replicas(t *testing.T, js natsjs.JetStream, n Names) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, name := range []string{n.RunsStream(), n.InboxStream(), "KV_" + n.IdempotencyBucket(), "KV_" + n.LeaseBucket()} {
		s, err := js.Stream(ctx(t), name)
		must(t, err)
		out[name] = s.CachedInfo().Config.Replicas
	}
	return out
}

func wantReplicas(t *testing.T, got map[string]int, want int) {
	t.Helper()
	for name, n := range got {
		if n != want {
			t.Errorf("%s has %d replicas, want %d", name, n, want)
		}
	}
}

// On a three-node cluster, Options.Replicas sets the replica count of
// every stream and bucket when they are created and when it differs;
// an Open that gives none (0) keeps the count an earlier Open set,
// instead of scaling the store down to one node; more replicas than
// servers is ErrReplicas.
func TestClusterReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	start := time.Now()
	c := natstest.StartCluster(t, 3)
	nc := natstest.Connect(t, c.Servers[0].ClientURL())
	js, err := natsjs.New(nc)
	must(t, err)
	t.Logf("cluster up in %v", time.Since(start).Round(time.Millisecond))

	openOn(t, nc, Options{})
	wantReplicas(t, replicas(t, js, testNames), 1)
	openOn(t, nc, Options{Replicas: 3})
	wantReplicas(t, replicas(t, js, testNames), 3)
	openOn(t, nc, Options{})
	wantReplicas(t, replicas(t, js, testNames), 3)
	openOn(t, nc, Options{Replicas: 1})
	wantReplicas(t, replicas(t, js, testNames), 1)
	_, err = Open(ctx(t), nc, testNames, Options{Replicas: 5})
	wantErr(t, err, ErrReplicas)
	wantReplicas(t, replicas(t, js, testNames), 1)
	t.Logf("done in %v", time.Since(start).Round(time.Millisecond))
}

// On a single server, an Open without a replica count is an Open with
// one, and asking for three is refused (ErrReplicas), changing nothing.
func TestReplicasOnOneServer(t *testing.T) {
	_, nc, _ := open(t, Options{})
	js, err := natsjs.New(nc)
	must(t, err)
	openOn(t, nc, Options{Replicas: 1})
	openOn(t, nc, Options{})
	wantReplicas(t, replicas(t, js, testNames), 1)
	_, err = Open(ctx(t), nc, testNames, Options{Replicas: 3})
	wantErr(t, err, ErrReplicas)
	wantReplicas(t, replicas(t, js, testNames), 1)
}
