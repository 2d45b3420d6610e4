package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// serveNATS is the -serve-nats mode: a standalone NATS server with
// JetStream (file storage in dir, one replica, the server's default
// settings otherwise) on a random loopback port. It prints the client URL
// and then the monitoring URL, each on a line of its own, and runs until SIGTERM, SIGINT or the end of its
// standard input. The workers benchmark starts it as a child process of
// its own so that the server's CPU and syscalls are its own process's.
func serveNATS(dir string) error {
	o := &server.Options{
		ServerName: "acr-perf",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
		// The monitoring endpoint, for the server's own counters of
		// what its clients send it (/varz in_msgs, in_bytes).
		HTTPHost: "127.0.0.1",
		HTTPPort: server.RANDOM_PORT,
	}
	srv, err := server.NewServer(o)
	if err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(20 * time.Second) {
		srv.Shutdown()
		return errors.New("nats server: not ready after 20s")
	}
	fmt.Println(srv.ClientURL())
	fmt.Printf("http://%s\n", srv.MonitorAddr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	<-ctx.Done()
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}

// natsServer is a -serve-nats child process.
type natsServer struct {
	cmd   *exec.Cmd
	stdin io.Closer
	// URL is the server's client URL (nats://127.0.0.1:PORT).
	URL string
	// Monitor is its monitoring URL (http://127.0.0.1:PORT).
	Monitor string
}

// startNATS starts this executable in -serve-nats mode with its store in
// dir and waits for its URL.
func startNATS(dir string) (*natsServer, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start nats server: %w", err)
	}
	cmd := exec.Command(self, "-serve-nats", dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start nats server: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start nats server: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start nats server: %w", err)
	}
	s := &natsServer{cmd: cmd, stdin: in}
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "nats://") {
		s.Stop()
		return nil, fmt.Errorf("start nats server: no URL on its output (%q): %v", line, err)
	}
	s.URL = strings.TrimSpace(line)
	mon, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(mon, "http://") {
		s.Stop()
		return nil, fmt.Errorf("start nats server: no monitoring URL on its output (%q): %v", mon, err)
	}
	s.Monitor = strings.TrimSpace(mon)
	return s, nil
}

// Traffic is what the server's clients have sent it so far, from its own
// counters (/varz): messages (every publish and request, whatever its
// subject) and their bytes.
type Traffic struct {
	Msgs  int64 `json:"in_msgs"`
	Bytes int64 `json:"in_bytes"`
}

// Sub is t less an earlier reading.
func (t Traffic) Sub(o Traffic) Traffic {
	return Traffic{Msgs: t.Msgs - o.Msgs, Bytes: t.Bytes - o.Bytes}
}

// Traffic reads the server's /varz.
func (s *natsServer) Traffic() (Traffic, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(s.Monitor + "/varz")
	if err != nil {
		return Traffic{}, fmt.Errorf("server varz: %w", err)
	}
	defer resp.Body.Close()
	var t Traffic
	if resp.StatusCode != http.StatusOK {
		return Traffic{}, fmt.Errorf("server varz: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
		return Traffic{}, fmt.Errorf("server varz: %w", err)
	}
	return t, nil
}

// Pid is the server process's id.
func (s *natsServer) Pid() int { return s.cmd.Process.Pid }

// CPU is the user and the system time the server process has used so
// far.
func (s *natsServer) CPU() (user, sys time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Pid()))
	if err != nil {
		return 0, 0, fmt.Errorf("server cpu: %w", err)
	}
	return parseProcStatCPU(string(b))
}

// Stop ends the server and waits for it.
func (s *natsServer) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// parseProcStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/PID/stat line. The command name (field 2) is in parentheses and
// may hold spaces, so fields are counted after its closing parenthesis.
func parseProcStatCPU(stat string) (user, sys time.Duration, err error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("proc stat: no command name in %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state), so utime (14) is f[11] and stime (15) f[12].
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("proc stat: %d fields after the command name", len(f))
	}
	var ticks [2]int64
	for k, s := range f[11:13] {
		if ticks[k], err = strconv.ParseInt(s, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("proc stat: %w", err)
		}
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / clockTicks }
	return tick(ticks[0]), tick(ticks[1]), nil
}
