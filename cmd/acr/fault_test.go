package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/runstore"
)

// The fault suite: real nats-server processes (built from the module this
// project requires) and real acr worker processes, and the faults a NATS
// deployment exists to survive: a server paused (SIGSTOP), the runs
// stream's leader killed (SIGKILL) on a three-node cluster, connections
// cut, workers killed, a worker stopped with SIGTERM. After each, every run
// is counted: effects in the world = committed records = items, no
// idempotency key committed twice, and acr ledger verify, log, audit and
// replay --verify succeed. make chaos runs it at full size (-fault.full).

var faultFull = flag.Bool("fault.full", false, "run the fault suite at full size (make chaos): 12 runs of 40 effects on the cluster, 6 on a single server")

// faultSize is the number of queue runs and items per run of a fault test.
func faultSize(runs, items, fullRuns, fullItems int) (int, int) {
	if *faultFull {
		return fullRuns, fullItems
	}
	return runs, items
}

// buildBinaries builds acr and nats-server (the version go.mod requires)
// into a temporary directory. ACR_FAULT_ACR names another acr binary to
// put through the suite instead (an earlier release, to see a fault it
// did not survive).
func buildBinaries(t *testing.T) (acrBin, natsBin string) {
	t.Helper()
	dir := t.TempDir()
	acrBin, natsBin = filepath.Join(dir, "acr"), filepath.Join(dir, "nats-server")
	builds := [][]string{{"-o", natsBin, "github.com/nats-io/nats-server/v2"}}
	if other := os.Getenv("ACR_FAULT_ACR"); other != "" {
		acrBin = other
	} else {
		builds = append(builds, []string{"-o", acrBin, "."})
	}
	for _, b := range builds {
		if out, err := exec.Command("go", append([]string{"build"}, b...)...).CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", b, err, out)
		}
	}
	return acrBin, natsBin
}

// freePort reserves a loopback port for a server about to start.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// natsNode is one nats-server process.
type natsNode struct {
	t    *testing.T
	name string
	port int
	args []string
	bin  string
	cmd  *exec.Cmd
	log  syncBuffer
}

func (n *natsNode) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

func (n *natsNode) start() {
	n.t.Helper()
	n.cmd = exec.Command(n.bin, n.args...)
	n.cmd.Stdout, n.cmd.Stderr = &n.log, &n.log
	require.NoError(n.t, n.cmd.Start())
	n.t.Cleanup(func() {
		if n.cmd != nil && n.cmd.ProcessState == nil {
			_ = n.cmd.Process.Signal(syscall.SIGCONT)
			_ = n.cmd.Process.Kill()
			_ = n.cmd.Wait()
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", n.port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("nats-server %s did not start: %v\n%s", n.name, err, n.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (n *natsNode) signal(sig syscall.Signal) { require.NoError(n.t, n.cmd.Process.Signal(sig)) }

// kill ends the server with SIGKILL and waits for it.
func (n *natsNode) kill() {
	n.signal(syscall.SIGKILL)
	_ = n.cmd.Wait()
}

// startServer starts a standalone JetStream server.
func startServer(t *testing.T, bin string) *natsNode {
	n := &natsNode{t: t, name: "solo", port: freePort(t), bin: bin}
	n.args = []string{"-js", "-sd", t.TempDir(), "-a", "127.0.0.1", "-p", strconv.Itoa(n.port), "-server_name", "solo"}
	n.start()
	return n
}

// clusterLine is the command docs/scale-out.md gives for one node of a
// three-node cluster.
var clusterLine = regexp.MustCompile("(?m)^ *nats-server -js .*--cluster_name .*$")

// startCluster starts three JetStream servers in a cluster, each with the
// command line docs/scale-out.md gives (its hosts and ports replaced by
// loopback ones), and waits until JetStream answers.
func startCluster(t *testing.T, bin string) []*natsNode {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "scale-out.md"))
	require.NoError(t, err)
	line := strings.TrimSpace(clusterLine.FindString(string(doc)))
	require.NotEmpty(t, line, "docs/scale-out.md gives no cluster command")
	cports := []int{freePort(t), freePort(t), freePort(t)}
	var nodes []*natsNode
	for i := range 3 {
		n := &natsNode{t: t, name: fmt.Sprintf("n%d", i+1), port: freePort(t), bin: bin}
		l := line
		for j := range 3 {
			l = strings.ReplaceAll(l, fmt.Sprintf("h%d:6222", j+1), fmt.Sprintf("127.0.0.1:%d", cports[j]))
		}
		l = strings.ReplaceAll(l, "0.0.0.0:6222", fmt.Sprintf("127.0.0.1:%d", cports[i]))
		l = strings.ReplaceAll(l, "/var/lib/nats", t.TempDir())
		l = strings.ReplaceAll(l, "-server_name n1", "-server_name "+n.name)
		f := strings.Fields(l)
		require.Equal(t, "nats-server", f[0])
		n.args = append(f[1:], "-a", "127.0.0.1", "-p", strconv.Itoa(n.port))
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		n.start()
	}
	nc, err := nats.Connect(nodes[0].url())
	require.NoError(t, err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return nodes
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster has no JetStream: %v\n%s", err, nodes[0].log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fleet is the acr side of a fault test: the binary, the store, the runs.
type fleet struct {
	t     *testing.T
	bin   string
	store string // a URL the test's own commands use
	dir   string // the state directory of the host that created the runs
	ids   []string
	items int
}

// acr runs one acr command and returns its output; it fails the test on
// a non-zero exit.
func (f *fleet) acr(args ...string) string {
	f.t.Helper()
	out, err := f.try(args...)
	require.NoError(f.t, err, "%s", out)
	return out
}

func (f *fleet) try(args ...string) (string, error) {
	cmd := f.command(f.dir, args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// command is an acr process on the host whose state directory is dir.
func (f *fleet) command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(f.bin, append([]string{"--state-dir", dir}, args...)...)
	cmd.Env = append(os.Environ(), "ACR_FAILPOINT=", "ACR_CLOCK=", "ACR_STORE=", "ACR_RUN_ID=")
	return cmd
}

// createRuns creates queue runs of f.items items each.
func (f *fleet) createRuns(runs int, extra ...string) {
	q := writeQueue(f.t, f.items)
	for i := range runs {
		id := fmt.Sprintf("run:f%02d", i)
		f.ids = append(f.ids, id)
		f.acr(append(append([]string{"--store", f.store, "--run-id", id}, extra...),
			"init", "--goal", filepath.Join(q, "goal.json"), "--contract", filepath.Join(q, "contract.json"), "--env", filepath.Join(q, "env.json"))...)
	}
}

// workerProc is a running acr worker process.
type workerProc struct {
	cmd *exec.Cmd
	log syncBuffer
	// done is closed when the process has exited, with its error in err.
	done chan struct{}
	err  error
}

// startWorker starts an acr worker on a host of its own.
func (f *fleet) startWorker(store string, args ...string) *workerProc {
	w := &workerProc{done: make(chan struct{})}
	w.cmd = f.command(f.t.TempDir(), append([]string{"--store", store, "--log-level", "info", "worker", "--poll", "200ms"}, args...)...)
	w.cmd.Stdout, w.cmd.Stderr = &w.log, &w.log
	require.NoError(f.t, w.cmd.Start())
	go func() {
		w.err = w.cmd.Wait()
		close(w.done)
	}()
	f.t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
		<-w.done
	})
	return w
}

// alive fails the test if the worker has exited.
func (w *workerProc) alive(t *testing.T, name string) {
	t.Helper()
	select {
	case <-w.done:
		t.Fatalf("worker %s exited: %v\n%s", name, w.err, w.log.String())
	default:
	}
}

// stop sends SIGTERM and returns the worker's exit error.
func (w *workerProc) stop() error {
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
		return w.err
	case <-time.After(60 * time.Second):
		_ = w.cmd.Process.Kill()
		return errors.New("did not exit within a minute of SIGTERM")
	}
}

// records is the number of ledger records of every run, read straight
// from the store.
func (f *fleet) records() int64 {
	f.t.Helper()
	s, err := runstore.DialStore(f.t.Context(), f.store, runstore.Connection{Patience: 30 * time.Second})
	require.NoError(f.t, err)
	defer s.Close()
	var n int64
	for _, id := range f.ids {
		m, err := runstore.OpenRemote(f.t.Context(), s, f.store, id, f.dir)
		require.NoError(f.t, err)
		l, err := m.Run.OpenLedger()
		require.NoError(f.t, err)
		n += l.Frontier().Seq
	}
	return n
}

// waitRecords waits until the runs hold at least n records together.
func (f *fleet) waitRecords(n int64) {
	f.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for f.records() < n {
		if time.Now().After(deadline) {
			f.t.Fatalf("the runs did not reach %d records", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settle waits until every run rests IDLE with nothing in its inbox and
// no lease held, checking meanwhile that the workers live.
func (f *fleet) settle(timeout time.Duration, workers map[string]*workerProc) {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for name, w := range workers {
			w.alive(f.t, name)
		}
		out, err := f.try("--store", f.store, "--json", "runs")
		var v struct{ Runs []runRow }
		if err == nil && json.Unmarshal([]byte(out), &v) == nil && len(v.Runs) == len(f.ids) {
			settled := 0
			for _, r := range v.Runs {
				if r.Status == "RUNNING" && r.Disposition == "IDLE" && r.Inbox == 0 && r.Cycle > 0 && r.Lease == nil {
					settled++
				}
			}
			if settled == len(f.ids) {
				return
			}
		}
		if time.Now().After(deadline) {
			var logs []string
			for name, w := range workers {
				logs = append(logs, name+":\n"+w.log.String())
			}
			f.t.Fatalf("the runs did not settle within %v: %s\n%v\n%s", timeout, out, err, strings.Join(logs, "\n---\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// count checks every run: its world holds every item done, once; its
// ledger has one committed record per item and no idempotency key twice;
// acr ledger verify, log, audit and replay --verify succeed.
func (f *fleet) count() {
	f.t.Helper()
	want := strings.Repeat("d\n", f.items)
	for _, id := range f.ids {
		m, done := f.remote(id)
		files, err := m.Run.World().Load()
		require.NoError(f.t, err)
		assert.Equal(f.t, want, string(files["queue.txt"]), "%s: the world in the store", id)
		keys := map[string]int{}
		for _, rec := range f.history(m) {
			if rec.Event.Type == event.ActionCommitted {
				keys[field(rec.Event, "idempotency_key")]++
			}
		}
		done()
		twice := 0
		for _, n := range keys {
			if n > 1 {
				twice++
			}
		}
		f.t.Logf("count %s: %d effects in the world, %d committed records, %d items, %d keys committed more than once",
			id, strings.Count(string(files["queue.txt"]), "d\n"), len(keys), f.items, twice)
		assert.Len(f.t, keys, f.items, "%s: committed records", id)
		for k, n := range keys {
			assert.Equal(f.t, 1, n, "%s: idempotency key %s committed %d times", id, k, n)
		}
		run := []string{"--store", f.store, "--run-id", id}
		assert.Contains(f.t, f.acr(append(run, "ledger", "verify")...), "ledger ok")
		f.acr(append(run, "log")...)
		f.acr(append(run, "audit", "1")...)
		assert.Contains(f.t, f.acr(append(run, "replay", "--verify")...), "replay ok")
	}
}

// get fetches a URL and returns the status code and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// remote opens run id of the fleet's store (without its lease); done
// closes the connection.
func (f *fleet) remote(id string) (m *runstore.Remote, done func()) {
	f.t.Helper()
	s, err := runstore.DialStore(f.t.Context(), f.store, runstore.Connection{Patience: 30 * time.Second})
	require.NoError(f.t, err)
	m, err = runstore.OpenRemote(f.t.Context(), s, f.store, id, f.dir)
	require.NoError(f.t, err)
	return m, s.Close
}

// history reads run id's whole ledger.
func (f *fleet) history(m *runstore.Remote) []event.Record {
	f.t.Helper()
	h, err := m.History()
	require.NoError(f.t, err)
	recs, err := h.ReadAll()
	require.NoError(f.t, err)
	return recs
}

// events counts run id's ledger records of a kind.
func (f *fleet) events(id string, kind event.Kind) int {
	f.t.Helper()
	m, done := f.remote(id)
	defer done()
	n := 0
	for _, r := range f.history(m) {
		if r.Event.Type == kind {
			n++
		}
	}
	return n
}

// soloFleet starts a standalone server and creates runs queue runs of
// items each in the store under prefix.
func soloFleet(t *testing.T, prefix string, runs, items int) (*fleet, *natsNode) {
	t.Helper()
	bin, natsBin := buildBinaries(t)
	srv := startServer(t, natsBin)
	f := &fleet{t: t, bin: bin, store: srv.url() + "/" + prefix, dir: t.TempDir(), items: items}
	f.createRuns(runs)
	return f, srv
}

// TestFaultServerPause: a worker draining queue runs while its server is
// paused for 6 s (SIGSTOP, then SIGCONT: connections stay open, nothing is
// answered) waits for it and goes on: it does not exit, and every run ends
// with its effects committed exactly once and a whole history. Before,
// the worker exited 74 after the first request timed out, having
// checkpointed over a cycle still open: the world held an effect the
// ledger did not, which then ran a second time.
func TestFaultServerPause(t *testing.T) {
	t.Parallel()
	runs, items := faultSize(3, 20, 6, 40)
	f, srv := soloFleet(t, "pause", runs, items)
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	w := f.startWorker(f.store, "--concurrency", "3", "--metrics", metrics)
	f.waitRecords(int64(runs) * 30) // the prologues, and a few cycles
	code, _ := get(t, "http://"+metrics+"/healthz")
	assert.Equal(t, 200, code, "healthy before the pause")
	srv.signal(syscall.SIGSTOP)
	// The first requests give up waiting for an answer after 5 s: from
	// then on the worker reports the outage.
	time.Sleep(5500 * time.Millisecond)
	code, body := get(t, "http://"+metrics+"/healthz")
	assert.Equal(t, 503, code, "unhealthy during the pause: %s", body)
	assert.Contains(t, body, "store unavailable since")
	time.Sleep(500 * time.Millisecond)
	srv.signal(syscall.SIGCONT)
	f.settle(2*time.Minute, map[string]*workerProc{"w": w})
	f.count()
	code, _ = get(t, "http://"+metrics+"/healthz")
	assert.Equal(t, 200, code, "healthy again")
	_, page := get(t, "http://"+metrics+"/metrics")
	for _, m := range []string{`acr_worker_cycles_total{disposition="IDLE"}`, `acr_worker_effects_total{outcome="committed"}`,
		`acr_store_requests_total{op="commit",result="ok"}`, "acr_store_wait_seconds_total", `acr_store_runs{disposition="IDLE"}`,
		"acr_worker_runs_held", "acr_store_up 1", "acr_store_request_seconds_bucket"} {
		assert.Contains(t, page, m)
	}
	assert.Regexp(t, `acr_store_requests_total\{op="[a-z.]+",result="unavailable"\} [1-9]`, page, "no unanswered request counted")
	assert.NotContains(t, page, "acr_store_wait_seconds_total 0\n", "no waiting counted")
	require.NoError(t, w.stop(), "%s", w.log.String())
	assert.Contains(t, w.log.String(), "the store does not answer", "the worker logged the outage")
	assert.Contains(t, w.log.String(), "the store answers again")
}

// TestFaultLeaderKill: a three-node cluster (started as docs/scale-out.md
// says), runs kept with three replicas, two workers each given the URL of
// one node that does not lead the runs stream; the leader is killed
// (SIGKILL) while they drain the runs. Both wait for the election and go
// on; every run ends whole. Then, with the workers idle, the killed node
// comes back and the new leader is killed too: idle workers ride out
// that failover as well. Before, both workers exited 74 about 5 s after
// the kill and runs were damaged.
func TestFaultLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node cluster of server processes")
	}
	t.Parallel()
	runs, items := faultSize(4, 15, 12, 40)
	bin, natsBin := buildBinaries(t)
	nodes := startCluster(t, natsBin)
	all := nodes[0].url() + "," + nodes[1].url() + "," + nodes[2].url()
	f := &fleet{t: t, bin: bin, store: all + "/chaos", dir: t.TempDir(), items: items}
	f.createRuns(runs, "--nats-replicas", "3")
	leader := f.leader(nodes)
	var others []*natsNode
	for _, n := range nodes {
		if n != leader {
			others = append(others, n)
		}
	}
	workers := map[string]*workerProc{}
	for i, n := range others {
		workers[fmt.Sprintf("w%d (%s)", i, n.name)] = f.startWorker(n.url()+"/chaos", "--concurrency", "2")
	}
	f.store = others[0].url() + "," + others[1].url() + "/chaos"
	f.waitRecords(int64(runs) * 25)
	t.Logf("killing %s, the leader of the runs stream", leader.name)
	leader.kill()
	f.settle(3*time.Minute, workers)
	f.count()

	// The next failover, with the workers idle.
	leader.start()
	f.store = all + "/chaos"
	time.Sleep(2 * time.Second)
	next := f.leader(nodes)
	t.Logf("killing %s, the leader now, with the workers idle", next.name)
	next.kill()
	time.Sleep(8 * time.Second)
	for name, w := range workers {
		w.alive(t, name)
		require.NoError(t, w.stop(), "%s: %s", name, w.log.String())
	}
}

// leader returns the node that leads the runs stream.
func (f *fleet) leader(nodes []*natsNode) *natsNode {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, n := range nodes {
			if n.cmd.ProcessState != nil {
				continue
			}
			nc, err := nats.Connect(n.url())
			if err != nil {
				continue
			}
			js, err := natsjs.New(nc)
			if err == nil {
				ctx, cancel := context.WithTimeout(f.t.Context(), 2*time.Second)
				s, serr := js.Stream(ctx, "chaos-runs")
				cancel()
				if serr == nil && s.CachedInfo().Cluster != nil {
					name := s.CachedInfo().Cluster.Leader
					nc.Close()
					for _, m := range nodes {
						if m.name == name {
							return m
						}
					}
				}
			}
			nc.Close()
		}
		if time.Now().After(deadline) {
			f.t.Fatal("the runs stream has no leader")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFaultDroppedConnections: the network cuts every connection to the
// server again and again (a proxy between them) while two workers drain
// the runs; each reconnects and goes on, and every run ends whole.
func TestFaultDroppedConnections(t *testing.T) {
	t.Parallel()
	runs, items := faultSize(3, 20, 6, 40)
	f, srv := soloFleet(t, "drop", runs, items)
	p := natstest.StartProxy(t, srv.url())
	workers := map[string]*workerProc{
		"a": f.startWorker(p.URL()+"/drop", "--concurrency", "2"),
		"b": f.startWorker(p.URL()+"/drop", "--concurrency", "2"),
	}
	f.waitRecords(int64(runs) * 20)
	for range 8 {
		p.Drop()
		time.Sleep(300 * time.Millisecond)
	}
	f.settle(2*time.Minute, workers)
	f.count()
	for name, w := range workers {
		require.NoError(t, w.stop(), "%s: %s", name, w.log.String())
	}
}

// TestFaultWorkerKilledLeaseBroken: a worker killed (SIGKILL) while it
// drains the runs leaves their leases held; acr runs shows who holds
// them, a command on one of them is refused naming that holder (not a
// state directory), and acr lease break ends them at once, so that a new
// worker takes the runs over and recovers them without waiting out the
// leases; every run ends whole.
func TestFaultWorkerKilledLeaseBroken(t *testing.T) {
	t.Parallel()
	runs, items := faultSize(3, 20, 6, 40)
	f, _ := soloFleet(t, "kill", runs, items)
	w := f.startWorker(f.store, "--concurrency", strconv.Itoa(runs))
	f.waitRecords(int64(runs) * 30)
	require.NoError(t, w.cmd.Process.Kill())
	<-w.done
	require.True(t, killedBySIGKILL(w.err), "%v", w.err)
	pid := strconv.Itoa(w.cmd.Process.Pid)

	out := f.acr("--store", f.store, "--json", "runs")
	require.Contains(t, out, `"pid":`+pid, "acr runs names the dead worker as the holder")
	require.Contains(t, out, `"command":"worker"`)
	text := f.acr("--store", f.store, "runs")
	assert.Regexp(t, `HELD BY +UNTIL`, text)
	held := ""
	for _, id := range f.ids {
		if strings.Contains(out, `"run_id":"`+id+`"`) && regexp.MustCompile(`"run_id":"`+regexp.QuoteMeta(id)+`"[^\n]*?"pid":`+pid).MatchString(out) {
			held = id
			break
		}
	}
	require.NotEmpty(t, held, "no run held by the dead worker: %s", out)
	busy, err := f.try("--store", f.store, "--run-id", held, "run", "--max-cycles", "1")
	require.Error(t, err)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, exitBusy, ee.ExitCode())
	assert.Contains(t, busy, ":"+pid+" (worker)", "the refusal names the holder")
	assert.NotContains(t, busy, "state directory")
	assert.Contains(t, busy, "lease break")

	noTerm, err := f.try("--store", f.store, "--run-id", held, "lease", "break")
	require.Error(t, err, "without a terminal, --yes is required: %s", noTerm)
	for _, id := range f.ids {
		out := f.acr("--store", f.store, "--run-id", id, "lease", "break", "--yes", "--by", "test", "--reason", "worker killed")
		assert.Regexp(t, `broke the lease of .* held by .*:`+pid+`|nobody holds the lease`, out)
	}
	out = f.acr("--store", f.store, "--json", "runs")
	assert.NotContains(t, out, `"pid":`+pid)
	w2 := f.startWorker(f.store, "--concurrency", "2")
	f.settle(2*time.Minute, map[string]*workerProc{"w2": w2})
	f.count()
	assert.Equal(t, 1, f.events(held, event.LeaseBroken), "the break is in the run's ledger")
	require.NoError(t, w2.stop(), "%s", w2.log.String())
}

// TestFaultSigtermCheckpoints: a worker stopped with SIGTERM while it
// drains the runs lets each cycle in progress finish, checkpoints every
// run it held and releases their leases before it exits 0: nothing is
// left for recovery. Before, it exited within milliseconds with its
// checkpoints refused by the cancelled context, and every stop of a
// service looked like a crash.
func TestFaultSigtermCheckpoints(t *testing.T) {
	t.Parallel()
	runs, items := faultSize(3, 30, 6, 40)
	f, _ := soloFleet(t, "term", runs, items)
	w := f.startWorker(f.store, "--concurrency", strconv.Itoa(runs))
	f.waitRecords(int64(runs) * 30)
	require.NoError(t, w.stop(), "SIGTERM: %s", w.log.String())
	out := f.acr("--store", f.store, "--json", "runs")
	assert.NotContains(t, out, `"lease"`, "a lease outlived the worker")
	s, err := runstore.DialStore(t.Context(), f.store, runstore.Connection{})
	require.NoError(t, err)
	defer s.Close()
	atRest := 0
	for _, id := range f.ids {
		m, err := runstore.OpenRemote(t.Context(), s, f.store, id, f.dir)
		require.NoError(t, err)
		_, man, err := m.ReadState()
		require.NoError(t, err)
		recs, err := m.ReadSince(man)
		require.NoError(t, err)
		assert.Zero(t, len(recs), "%s: ledger records beyond the checkpoint after SIGTERM", id)
		if man.CycleSeq > 0 {
			atRest++
		}
	}
	assert.Positive(t, atRest, "no run had run a cycle before SIGTERM")
	w2 := f.startWorker(f.store)
	f.settle(2*time.Minute, map[string]*workerProc{"w2": w2})
	f.count()
	require.NoError(t, w2.stop())
}

// TestFaultRunOnPausedServer: acr run against a server paused longer
// than --store-wait exits 74 naming the store and prints no summary that
// could read as success; once the server is back, the next acr run
// recovers what was stored and finishes the run whole. Before, it printed
// "N cycle(s), final disposition CONTINUE" and then exited 74.
func TestFaultRunOnPausedServer(t *testing.T) {
	t.Parallel()
	f, srv := soloFleet(t, "one", 1, 60)
	run := f.command(f.dir, "--store", f.store, "--run-id", f.ids[0], "--store-wait", "1s", "run", "--max-cycles", "200")
	stdout, err := run.StdoutPipe()
	require.NoError(t, err)
	var errOut syncBuffer
	run.Stderr = &errOut
	require.NoError(t, run.Start())
	sc := bufio.NewScanner(stdout)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) == 5 {
			srv.signal(syscall.SIGSTOP)
		}
	}
	err = run.Wait()
	srv.signal(syscall.SIGCONT)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stdout: %v", lines)
	assert.Equal(t, exitIO, ee.ExitCode(), "%s", errOut.String())
	assert.Contains(t, errOut.String(), "--store")
	for _, l := range lines {
		assert.NotContains(t, l, "final disposition", "a summary after a store failure")
	}
	// Its lease's release may not have reached the server (it lands if
	// the request was on its way when the server stopped): a lease left
	// lapses in 30 s, or a person who knows the process is gone breaks it.
	f.acr("--store", f.store, "--run-id", f.ids[0], "lease", "break", "--yes", "--reason", "acr run exited 74")
	f.acr("--store", f.store, "--run-id", f.ids[0], "run", "--max-cycles", "200")
	f.count()
	assert.Zero(t, f.events(f.ids[0], event.ProviderFailed), "the outage was counted as a provider failure")
}
