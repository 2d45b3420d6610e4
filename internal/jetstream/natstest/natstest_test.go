package natstest

import (
	"testing"
	"time"
)

// A standalone server starts, serves JetStream, restarts on the same port
// with its store, and says how long that took.
func TestStartRestart(t *testing.T) {
	start := time.Now()
	s := Start(t)
	t.Logf("standalone JetStream server ready in %v", time.Since(start).Round(time.Microsecond))
	nc := Connect(t, s.ClientURL())
	if _, err := nc.Request("$JS.API.INFO", nil, 5*time.Second); err != nil {
		t.Fatalf("JetStream info: %v", err)
	}
	port := s.Addr().String()
	start = time.Now()
	s.Restart()
	t.Logf("restarted in %v", time.Since(start).Round(time.Microsecond))
	if s.Addr().String() != port {
		t.Fatalf("restarted on %s, was %s", s.Addr(), port)
	}
}
