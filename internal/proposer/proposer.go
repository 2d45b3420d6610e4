// Package proposer runs an external proposer: the program a contract
// names to propose actions when the declared fixes are used up (an LLM
// behind a small script, a codemod, any program). It is the I/O half of
// cognition's proposer seam (docs/providers.md): it adds the content of the
// files the request names, writes the request to the program's stdin,
// reads one proposal from its stdout, decodes it strictly, and looks at the
// world's files the proposal targets. What it returns is recorded in the
// ledger before anything is decided on it; a program that fails, times out
// or answers anything but a valid proposal is a provider failure.
package proposer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/command"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/world"
)

// Files reads the world's files, confined as every world read is: a path
// the world refuses gives an error, a missing file exists=false.
type Files interface {
	ReadFile(p string) (content []byte, exists bool, err error)
}

// Runner asks one proposer program.
type Runner struct {
	// Argv is the program (contract proposer.argv, resolved at init).
	Argv []string
	// Timeout bounds one proposal.
	Timeout time.Duration
	// Dir is the program's working directory (the world's).
	Dir string
	// Environ reads acr's own environment; PassEnv the names it passes.
	Environ func(string) (string, bool)
	PassEnv []string
	// Files reads the world.
	Files Files
}

// New returns the runner for a contract's proposer.
func New(p *governance.Proposer, dir string, environ func(string) (string, bool), files Files) *Runner {
	t := p.TimeoutSeconds
	if t == 0 {
		t = governance.DefaultProposerTimeout
	}
	return &Runner{Argv: p.Argv, Timeout: time.Duration(t) * time.Second, Dir: dir, Environ: environ, PassEnv: p.PassEnv, Files: files}
}

// MaxProposalBytes bounds what a proposer may answer.
const MaxProposalBytes = 4 << 20

// Propose implements kernel.Proposer. When ctx ends first the program is
// killed and the error wraps ctx's: acr is stopping, and the proposer gave
// no answer that could be held against it.
func (r *Runner) Propose(ctx context.Context, req cognition.ProposalRequest) (cognition.Reply, error) {
	shown := r.fill(req.Files)
	req.Files = shown
	body, err := codec.Marshal(req)
	if err != nil {
		return cognition.Reply{}, fmt.Errorf("encode request: %w", err)
	}
	env := command.Environment(r.Environ, r.PassEnv, map[string]string{"ACR_RUN_ID": req.RunID, "ACR_CYCLE": strconv.FormatInt(req.CycleSeq, 10)})
	res, err := command.Run(ctx, command.Spec{Argv: r.Argv, Dir: r.Dir, Env: env, Timeout: r.Timeout,
		Stdin: append(body, '\n'), MaxOutput: MaxProposalBytes})
	if errors.Is(err, command.ErrStart) {
		return cognition.Reply{}, fault("could not be started", err.Error(), nil)
	}
	if err != nil {
		return cognition.Reply{}, fmt.Errorf("proposer: %w", err)
	}
	cr := res.CommandResult
	cr.DurationMS = res.Duration.Milliseconds()
	cr.Stdout = clip(cr.Stdout) // the whole answer is in the reply when it decodes
	switch {
	case cr.TimedOut:
		return cognition.Reply{}, fault("timed out after "+r.Timeout.String()+"; its process group was killed", "", &cr)
	case cr.Signal != "":
		return cognition.Reply{}, fault("killed by signal "+cr.Signal, "", &cr)
	case cr.ExitCode != 0:
		return cognition.Reply{}, fault(fmt.Sprintf("exit %d", cr.ExitCode), firstLine(cr.Stderr), &cr)
	case res.StdoutBytes > MaxProposalBytes:
		return cognition.Reply{}, fault(fmt.Sprintf("answered %d bytes, more than %d", res.StdoutBytes, MaxProposalBytes), "", &cr)
	}
	p, err := Decode(res.StdoutRaw)
	if err != nil {
		return cognition.Reply{}, fault("invalid proposal", err.Error(), &cr)
	}
	reply := cognition.Reply{Schema: cognition.ReplySchema, Request: codec.NewRef("preqsent", body), Files: make([]cognition.FileShown, len(shown)),
		Proposal: p, Targets: []cognition.TargetFact{}, DurationMS: cr.DurationMS}
	for i, f := range shown {
		f.Content = "" // the hash names what was sent
		reply.Files[i] = f
	}
	for _, a := range p.Actions {
		reply.Targets = append(reply.Targets, r.target(a))
	}
	return reply, nil
}

// Decode reads a proposal strictly: canonical JSON is not required, but
// unknown fields, duplicate keys, keys in the wrong case, trailing bytes
// and a wrong schema are all refused, naming the field.
func Decode(b []byte) (cognition.Proposal, error) {
	var p cognition.Proposal
	if err := codec.Unmarshal(bytes.TrimSpace(b), &p); err != nil {
		return p, err
	}
	if err := p.Validate(); err != nil {
		return p, err
	}
	// A field left out is recorded as empty, never as null: the schema
	// types both as arrays, and strict decoding refuses null for them.
	if p.Actions == nil {
		p.Actions = []cognition.ProposedAction{}
	}
	if p.Rationale == nil {
		p.Rationale = []string{}
	}
	return p, nil
}

// fill reads the files a request shows, bounded.
func (r *Runner) fill(files []cognition.FileShown) []cognition.FileShown {
	out := make([]cognition.FileShown, 0, len(files))
	for _, f := range files {
		data, exists, err := r.Files.ReadFile(f.Path)
		if err != nil || !exists {
			continue // refused or gone since the observation: not shown
		}
		f.SHA256, f.Bytes = codec.FingerprintOf(data), int64(len(data))
		if len(data) > cognition.MaxProposalFileBytes {
			data, f.Truncated = data[:cognition.MaxProposalFileBytes], true
		}
		f.Content = strings.ToValidUTF8(string(data), "\uFFFD")
		out = append(out, f)
	}
	return out
}

// target looks at what a proposed action would act on.
func (r *Runner) target(a cognition.ProposedAction) cognition.TargetFact {
	t := cognition.TargetFact{Path: a.Target}
	if a.Target == "" {
		return t
	}
	if _, err := world.CleanPath(a.Target); err != nil {
		t.Refused = err.Error()
		return t
	}
	data, exists, err := r.Files.ReadFile(a.Target)
	switch {
	case err != nil:
		t.Refused = err.Error()
	case exists:
		t.SHA256 = codec.FingerprintOf(data)
		if a.Find != "" {
			t.Finds = bytes.Count(data, []byte(a.Find))
		}
	}
	return t
}

// fault is a proposer failure, with what the program said.
func fault(reason, detail string, cr *world.CommandResult) error {
	if detail != "" {
		reason += ": " + detail
	}
	return &world.ProviderFault{Source: "proposer", Reason: reason, Command: cr}
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return clip(l)
		}
	}
	return ""
}

// clip bounds text kept in a failure record.
func clip(s string) string {
	const max = 4 << 10
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}
