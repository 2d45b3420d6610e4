package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const request = `{"schema":"acr.proposal-request/v0.1","run_id":"run:x","cycle_seq":2,"item":{"id":"check:vet"}}`

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// fakeModel is a local chat-completions endpoint: no network in tests.
func fakeModel(t *testing.T, answer string, seen *completionRequest, auth *string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/v1/chat/completions", r.URL.Path)
		*auth = r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		require.NoError(t, json.Unmarshal(b, seen))
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": answer}}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestProposalFromAModel(t *testing.T) {
	var seen completionRequest
	var auth string
	answer := "Here is my proposal:\n```json\n" +
		`{"schema": "acr.proposal/v0.1", "actions": [{"operation": "apply_local_patch", "target": "main.go", "find": "%d", "replace": "%s"}], "rationale": ["%d with a string"]}` +
		"\n```"
	srv := fakeModel(t, answer, &seen, &auth)
	var out bytes.Buffer
	env := envOf(map[string]string{"ACR_LLM_URL": srv.URL + "/v1/", "ACR_LLM_MODEL": "qwen-coder", "ACR_LLM_API_KEY": "k3y"})
	require.NoError(t, run(context.Background(), strings.NewReader(request+"\n"), &out, env, srv.Client()))
	assert.JSONEq(t, `{"schema":"acr.proposal/v0.1","actions":[{"operation":"apply_local_patch","target":"main.go","find":"%d","replace":"%s"}],"rationale":["%d with a string"]}`, out.String())
	assert.Equal(t, "Bearer k3y", auth)
	assert.Equal(t, "qwen-coder", seen.Model)
	require.Len(t, seen.Messages, 2)
	assert.Equal(t, "system", seen.Messages[0].Role)
	assert.Equal(t, request, seen.Messages[1].Content, "the request goes to the model verbatim")
	assert.Equal(t, map[string]any{"type": "json_object"}, seen.ResponseFormat)
}

func TestAnswersThatAreNotProposals(t *testing.T) {
	for _, tc := range []struct{ answer, want string }{
		{"I would fix the format string.", "no JSON object"},
		{`{"schema": "acr.proposal/v0.1", "actions": [], "confidence": 0.9}`, "unknown field"},
		{`{"schema": "v2", "actions": []}`, "schema"},
	} {
		var seen completionRequest
		var auth string
		srv := fakeModel(t, tc.answer, &seen, &auth)
		env := envOf(map[string]string{"ACR_LLM_URL": srv.URL + "/v1", "ACR_LLM_MODEL": "m", "ACR_LLM_RESPONSE_FORMAT": "none"})
		err := run(context.Background(), strings.NewReader(request), io.Discard, env, srv.Client())
		require.ErrorContains(t, err, tc.want)
		assert.Nil(t, seen.ResponseFormat)
		assert.Empty(t, auth)
	}
}

func TestNeedsConfiguration(t *testing.T) {
	err := run(context.Background(), strings.NewReader(request), io.Discard, envOf(nil), http.DefaultClient)
	require.ErrorContains(t, err, "ACR_LLM_URL and ACR_LLM_MODEL")
}

func TestEmptyProposalGetsAReason(t *testing.T) {
	p, err := parse(`{"schema": "acr.proposal/v0.1", "actions": []}`)
	require.NoError(t, err)
	assert.Equal(t, []string{"the model proposed nothing"}, p.Rationale)
}
