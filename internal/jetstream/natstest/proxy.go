package natstest

import (
	"net"
	"sync"
	"testing"
)

// Proxy stands between clients and a server on loopback and plays the
// network's faults: Pause holds every byte in both directions, so the
// server looks paused to its clients (their connections stay open and
// nothing is answered, as when the server's process is stopped with
// SIGSTOP; what was sent arrives once Resume lets it through); Drop cuts
// every connection, as a network partition or a crashed load balancer
// does. Clients connect to URL instead of the server's.
type Proxy struct {
	t      testing.TB
	target string
	ln     net.Listener

	mu     sync.Mutex
	paused bool
	resume *sync.Cond
	conns  map[net.Conn]bool
	closed bool
}

// StartProxy listens on a random loopback port and forwards every
// connection to target (host:port, or a nats:// URL's host:port); it
// stops when the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &Proxy{t: t, target: hostPort(target), ln: ln, conns: map[net.Conn]bool{}}
	p.resume = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// hostPort strips a nats:// scheme.
func hostPort(target string) string {
	const scheme = "nats://"
	if len(target) > len(scheme) && target[:len(scheme)] == scheme {
		return target[len(scheme):]
	}
	return target
}

// URL is the address clients connect to.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Pause holds every byte from now on, in both directions, until Resume.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
}

// Resume delivers what was held and forwards again.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = false
	p.resume.Broadcast()
}

// Drop closes every connection now open; new ones are accepted.
func (p *Proxy) Drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.paused = false
	p.resume.Broadcast()
	p.mu.Unlock()
	_ = p.ln.Close()
	p.Drop()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			return
		}
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

// pipe copies from src to dst, holding each chunk while the proxy is
// paused; either side closing closes both.
func (p *Proxy) pipe(src, dst net.Conn) {
	defer func() {
		_ = src.Close()
		_ = dst.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.paused {
				p.resume.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
