package natstest

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// readyTimeout bounds how long a server may take to accept connections.
const readyTimeout = 20 * time.Second

// Option changes a server's options before it starts.
type Option func(*server.Options)

// SyncAlways makes the server fsync every write (the `sync: always`
// setting of the jetstream block); the default syncs every two minutes.
func SyncAlways() Option { return func(o *server.Options) { o.SyncAlways = true } }

// Server is one embedded server. Restart keeps its port and its store, so a
// client with reconnects enabled finds it again.
type Server struct {
	*server.Server
	t    testing.TB
	opts server.Options
}

// Start starts a standalone JetStream server on a random loopback port
// with its store in t.TempDir(); the server shuts down when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := server.Options{
		ServerName: "acr-test",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   t.TempDir(),
		NoLog:      true,
		NoSigs:     true,
	}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Server{t: t, opts: o}
	s.start()
	// The port is fixed from here on so that Restart comes back where
	// clients look for it.
	s.opts.Port = s.Addr().(*net.TCPAddr).Port
	t.Cleanup(s.Shutdown)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	o := s.opts
	srv, err := server.NewServer(&o)
	if err != nil {
		s.t.Fatalf("natstest: new server: %v", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(readyTimeout) {
		srv.Shutdown()
		s.t.Fatalf("natstest: server %s not ready after %v", o.ServerName, readyTimeout)
	}
	s.Server = srv
}

// Shutdown stops the server and waits until it has stopped.
func (s *Server) Shutdown() {
	s.Server.Shutdown()
	s.Server.WaitForShutdown()
}

// Restart stops the server and starts it again on the same port with the
// same store, as after a crash of the process (the store is not flushed
// first beyond what Shutdown does).
func (s *Server) Restart() {
	s.t.Helper()
	s.Shutdown()
	s.start()
}

// Connect opens a client connection to the server (or, for a cluster
// member, to it first) that the test closes when it ends.
func Connect(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("natstest: connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Cluster is a set of servers routed to each other with clustered
// JetStream.
type Cluster struct {
	Servers []*Server
}

// StartCluster starts n routed JetStream servers (n >= 3 for replicated
// streams) and waits until they have elected a meta leader that sees all
// of them online. Cluster ports are reserved by listening on port 0 and
// closing, so another process (a parallel test package) may take one
// first; and on a loaded machine a member can miss the readiness deadline.
// Neither says anything about the code under test, so a cluster that does
// not come up is torn down and started again on fresh ports, up to three
// times, before the test fails.
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var c *Cluster
		if c, err = startCluster(t, n, opts); err == nil {
			return c
		}
		t.Logf("natstest: cluster start attempt %d: %v", attempt, err)
	}
	t.Fatalf("natstest: %v", err)
	return nil
}

// startCluster is one attempt of StartCluster; on error every server it
// started is shut down.
func startCluster(t testing.TB, n int, opts []Option) (_ *Cluster, err error) {
	ports := make([]int, n)
	var routes []*url.URL
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve port: %w", err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])})
	}
	c := &Cluster{}
	defer func() {
		if err != nil {
			for _, s := range c.Servers {
				s.Shutdown()
			}
		}
	}()
	done := make(chan *Server, n)
	for i := range n {
		o := server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoLog:      true,
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "acr-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:     routes,
		}
		for _, opt := range opts {
			opt(&o)
		}
		s := &Server{t: t, opts: o}
		// Servers wait for their routes before JetStream is ready, so
		// they start side by side.
		go func() {
			srv, err := server.NewServer(&s.opts)
			if err != nil {
				done <- nil
				return
			}
			srv.Start()
			s.Server = srv
			done <- s
		}()
	}
	var failed bool
	for range n {
		s := <-done
		if s == nil {
			failed = true
			continue
		}
		c.Servers = append(c.Servers, s)
		t.Cleanup(s.Shutdown)
	}
	if failed {
		return nil, fmt.Errorf("a cluster server did not start")
	}
	for _, s := range c.Servers {
		if !s.ReadyForConnections(readyTimeout) {
			return nil, fmt.Errorf("server %s not ready after %v", s.opts.ServerName, readyTimeout)
		}
		s.opts.Port = s.Addr().(*net.TCPAddr).Port
	}
	// A meta leader alone is not enough: until it has heard from every
	// peer, placing a replicated stream fails with "no suitable peers".
	deadline := time.Now().Add(readyTimeout)
	for l := c.Leader(); l == nil || len(l.JetStreamClusterPeers()) < n; l = c.Leader() {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no JetStream meta leader with %d peers online after %v", n, readyTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c, nil
}

// Leader returns the server that leads the JetStream meta group, or nil.
func (c *Cluster) Leader() *Server {
	for _, s := range c.Servers {
		if s.Running() && s.JetStreamIsLeader() {
			return s
		}
	}
	return nil
}

// URLs returns the client URLs of all members, comma-separated, as
// nats.Connect takes them.
func (c *Cluster) URLs() string {
	var u string
	for i, s := range c.Servers {
		if i > 0 {
			u += ","
		}
		u += s.ClientURL()
	}
	return u
}
