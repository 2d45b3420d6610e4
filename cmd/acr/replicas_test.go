package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// TestNATSReplicas: --nats-replicas (ACR_NATS_REPLICAS, nats-replicas: in
// acr.yaml) takes 1 to 5 and reaches the store's connection; any other
// value is refused naming where it came from (64; 65 from the file), and
// a count the server cannot hold is a usage error too, not an internal
// one.
func TestNATSReplicas(t *testing.T) {
	srv := natstest.Start(t)
	store := srv.ClientURL() + "/reptest"
	dir := t.TempDir()
	run := func(env map[string]string, args ...string) (int, *app, string) {
		t.Helper()
		for k, v := range env {
			t.Setenv(k, v)
		}
		var stdout, stderr bytes.Buffer
		a := newApp(&stdout, &stderr)
		a.term = func(io.Writer) (bool, int) { return false, 0 }
		a.getenv = func(k string) string { return env[k] }
		code := a.execute(t.Context(), append([]string{"--state-dir", filepath.Join(dir, "state")}, args...))
		for k := range env {
			require.NoError(t, os.Unsetenv(k))
		}
		return code, a, stderr.String()
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		code  int
		names string
	}{
		{"zero", nil, []string{"--nats-replicas", "0", "runs"}, exitUsage, "--nats-replicas 0: want 1 to 5"},
		{"six", nil, []string{"--nats-replicas", "6", "runs"}, exitUsage, "--nats-replicas 6: want 1 to 5"},
		{"negative", nil, []string{"--nats-replicas=-1", "runs"}, exitUsage, "--nats-replicas -1"},
		{"not a number", nil, []string{"--nats-replicas", "three", "runs"}, exitUsage, "--nats-replicas"},
		{"env", map[string]string{"ACR_NATS_REPLICAS": "9"}, []string{"runs"}, exitUsage, "ACR_NATS_REPLICAS=9: want 1 to 5"},
		{"more than the server holds", nil, []string{"--store", store, "--nats-replicas", "3", "runs"}, exitUsage, "cannot hold that many replicas (3 asked for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(tc.env, tc.args...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, errOut, tc.names)
		})
	}
	t.Run("file", func(t *testing.T) {
		yaml := filepath.Join(t.TempDir(), "acr.yaml")
		require.NoError(t, os.WriteFile(yaml, []byte("nats-replicas: 7\n"), 0o644))
		code, _, errOut := run(nil, "--config", yaml, "runs")
		assert.Equal(t, exitData, code, errOut)
		assert.Contains(t, errOut, "field nats-replicas: 7: want 1 to 5")
	})
	t.Run("reaches the connection", func(t *testing.T) {
		code, a, errOut := run(map[string]string{"ACR_NATS_REPLICAS": "1"}, "--store", store, "runs")
		assert.Equal(t, 0, code, errOut)
		assert.Equal(t, 1, a.connection().Replicas)
		code, a, errOut = run(nil, "--store", store, "runs")
		assert.Equal(t, 0, code, errOut)
		assert.Equal(t, 0, a.connection().Replicas, "not given: the store keeps its count")
	})
}
