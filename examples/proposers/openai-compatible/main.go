// Command openai-compatible is an acr proposer backed by a language model
// behind any OpenAI-compatible chat-completions endpoint: llama.cpp's
// server, Ollama, vLLM, or a hosted API. acr runs it with one
// acr.proposal-request/v0.1 on stdin; it asks the model and writes the
// model's answer, checked to be an acr.proposal/v0.1, on stdout.
//
// Configuration comes from the environment (list the names under the
// contract's proposer.pass_env so that acr passes them through):
//
//	ACR_LLM_URL      base URL of the API, e.g. http://127.0.0.1:8080/v1
//	                 (…/chat/completions is appended unless present)
//	ACR_LLM_MODEL    model name
//	ACR_LLM_API_KEY  bearer token, if the endpoint wants one
//	ACR_LLM_RESPONSE_FORMAT  "json_object" (default) asks for JSON mode;
//	                 "none" leaves it out for servers that reject it
//
// It is written in Go so that it needs nothing the acr build does not
// already need: no interpreter, no packages, one static binary. A model
// that answers something that is not a valid proposal makes it exit 1 with
// the reason on stderr, which acr records as a provider failure; a model
// can only ever propose, never decide.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	if err := run(context.Background(), os.Stdin, os.Stdout, os.LookupEnv, http.DefaultClient); err != nil {
		fmt.Fprintln(os.Stderr, "openai-compatible:", err)
		os.Exit(1)
	}
}

// systemPrompt tells the model the protocol. The request itself goes in the
// user message, verbatim.
const systemPrompt = `You propose fixes for acr, a governed autonomous loop that keeps a project healthy.
You get a JSON request (acr.proposal-request/v0.1): the goal, one failing check with its output,
the content of the files it names, the contract's rules, the commands you may ask for, and earlier attempts.
Answer with exactly one JSON object and nothing else:
{"schema": "acr.proposal/v0.1", "actions": [...], "rationale": ["..."]}
Each action is one of:
  {"operation": "apply_local_patch", "target": "<file>", "find": "<exact text in the file>", "replace": "<new text>"}
  {"operation": "record_artifact", "target": "<file>", "content": "<whole new file>"}
  {"operation": "run_command", "fix": "<id of a command listed under commands>"}
Rules: "find" must be copied exactly from the file as shown (whitespace included) and should be
short but unique; propose the smallest change that makes the check pass; one action is best;
never propose what earlier attempts show failed; only use the operations and commands the request
lists. If you cannot help, answer {"schema": "acr.proposal/v0.1", "actions": [], "rationale": ["why"]}.
Your proposal is checked and governed before anything happens; you cannot approve anything.`

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type completionRequest struct {
	Model          string         `json:"model"`
	Messages       []message      `json:"messages"`
	Temperature    float64        `json:"temperature"`
	ResponseFormat map[string]any `json:"response_format,omitempty"`
}

type completionResponse struct {
	Choices []struct {
		Message message `json:"message"`
	} `json:"choices"`
}

// proposal mirrors acr.proposal/v0.1; decoding refuses anything else.
type proposal struct {
	Schema    string   `json:"schema"`
	Actions   []action `json:"actions"`
	Rationale []string `json:"rationale,omitempty"`
}

type action struct {
	Operation   string `json:"operation"`
	Target      string `json:"target,omitempty"`
	Find        string `json:"find,omitempty"`
	Replace     string `json:"replace,omitempty"`
	Occurrences int    `json:"occurrences,omitempty"`
	Content     string `json:"content,omitempty"`
	Fix         string `json:"fix,omitempty"`
}

func run(ctx context.Context, stdin io.Reader, stdout io.Writer, env func(string) (string, bool), client *http.Client) error {
	base, _ := env("ACR_LLM_URL")
	model, _ := env("ACR_LLM_MODEL")
	if base == "" || model == "" {
		return errors.New("ACR_LLM_URL and ACR_LLM_MODEL must be set (and listed under the contract's proposer.pass_env)")
	}
	req, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(req, &probe); err != nil || probe.Schema != "acr.proposal-request/v0.1" {
		return fmt.Errorf("stdin is not an acr.proposal-request/v0.1 (%v)", err)
	}
	body := completionRequest{Model: model, Temperature: 0, Messages: []message{
		{Role: "system", Content: systemPrompt},
		{Role: "user", Content: string(bytes.TrimSpace(req))},
	}}
	if f, _ := env("ACR_LLM_RESPONSE_FORMAT"); f != "none" {
		body.ResponseFormat = map[string]any{"type": "json_object"}
	}
	content, err := complete(ctx, client, endpoint(base), env, body)
	if err != nil {
		return err
	}
	p, err := parse(content)
	if err != nil {
		return fmt.Errorf("the model's answer is not a proposal: %w; it said: %.400s", err, content)
	}
	out, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}

// endpoint is the chat-completions URL for a base URL.
func endpoint(base string) string {
	base = strings.TrimRight(base, "/")
	if strings.HasSuffix(base, "/chat/completions") {
		return base
	}
	return base + "/chat/completions"
}

func complete(ctx context.Context, client *http.Client, url string, env func(string) (string, bool), body completionRequest) (string, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	r.Header.Set("Content-Type", "application/json")
	if key, _ := env("ACR_LLM_API_KEY"); key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(r)
	if err != nil {
		return "", fmt.Errorf("ask %s: %w", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return "", fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s: %.400s", url, resp.Status, data)
	}
	var cr completionResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return "", fmt.Errorf("decode answer: %w", err)
	}
	if len(cr.Choices) == 0 {
		return "", errors.New("the answer has no choices")
	}
	return cr.Choices[0].Message.Content, nil
}

// parse takes the proposal out of what a model wrote: models often wrap
// JSON in a code fence or a sentence, so the outermost object is taken and
// decoded strictly.
func parse(content string) (proposal, error) {
	var p proposal
	i, j := strings.Index(content, "{"), strings.LastIndex(content, "}")
	if i < 0 || j < i {
		return p, errors.New("no JSON object")
	}
	dec := json.NewDecoder(strings.NewReader(content[i : j+1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, err
	}
	if p.Schema != "acr.proposal/v0.1" {
		return p, fmt.Errorf("schema %q, want acr.proposal/v0.1", p.Schema)
	}
	if p.Actions == nil {
		p.Actions = []action{}
	}
	if len(p.Actions) == 0 && len(p.Rationale) == 0 {
		p.Rationale = []string{"the model proposed nothing"}
	}
	return p, nil
}
