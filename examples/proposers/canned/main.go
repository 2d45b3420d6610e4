// Command canned is an acr proposer that answers from a file of prepared
// proposals, one per check id. It stands in for a model where there is none
// (an offline demo, a test, a CI run): acr cannot tell it from any other
// proposer, and governs what it proposes the same way.
//
//	canned PROPOSALS.json < request.json > proposal.json
//
// PROPOSALS.json maps a check id to an acr.proposal/v0.1 document. A check
// without an entry gets an empty proposal that says so.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "canned:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: canned PROPOSALS.json < request.json")
	}
	var req struct {
		Schema string `json:"schema"`
		Item   struct {
			Check struct {
				ID string `json:"id"`
			} `json:"check"`
		} `json:"item"`
	}
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	if req.Schema != "acr.proposal-request/v0.1" {
		return fmt.Errorf("request schema %q, want acr.proposal-request/v0.1", req.Schema)
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var canned map[string]json.RawMessage
	if err := json.Unmarshal(b, &canned); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	p, ok := canned[req.Item.Check.ID]
	if !ok {
		p, _ = json.Marshal(map[string]any{"schema": "acr.proposal/v0.1", "actions": []any{},
			"rationale": []string{"no prepared proposal for check " + req.Item.Check.ID}})
	}
	_, err = fmt.Fprintf(stdout, "%s\n", p)
	return err
}
