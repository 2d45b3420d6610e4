package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCanned(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"vet": {"schema": "acr.proposal/v0.1", "actions": [], "rationale": ["x"]}}`), 0o644))
	var out bytes.Buffer
	require.NoError(t, run([]string{file}, strings.NewReader(`{"schema": "acr.proposal-request/v0.1", "item": {"check": {"id": "vet"}}}`), &out))
	assert.JSONEq(t, `{"schema": "acr.proposal/v0.1", "actions": [], "rationale": ["x"]}`, out.String())
	out.Reset()
	require.NoError(t, run([]string{file}, strings.NewReader(`{"schema": "acr.proposal-request/v0.1", "item": {"check": {"id": "other"}}}`), &out))
	assert.Contains(t, out.String(), "no prepared proposal for check other")
	require.Error(t, run([]string{file}, strings.NewReader(`{"schema": "x"}`), &out))
	require.Error(t, run(nil, strings.NewReader(``), &out))
}
