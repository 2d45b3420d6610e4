package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/command"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/notify"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
)

// notifyOptions is the notify program run, step and worker tell a person
// with.
type notifyOptions struct {
	Program string `flag:"notify"`
}

// addNotifyFlag gives run, step and worker --notify.
func addNotifyFlag(cmd *cobra.Command) {
	cmd.Flags().String("notify", "", "program run with one JSON document on stdin when the run comes to need a person or to an end (once per condition; docs/operations.md)")
}

// notifyEnvPrefix: the notify program gets the variables whose names start
// with it (a webhook's URL, a mail address), beyond PATH, HOME and LANG.
const notifyEnvPrefix = "ACR_NOTIFY_"

// notifyAfter runs the notify program for the condition the run is in at
// the end of an invocation, if it needs a person or ended and was not
// notified before (kernel.Driver.Alert), and records that it ran. err is
// the invocation's error: after a failure that left the run unknown (an
// I/O error) nothing is notified; a run found or left FAULTED is. What
// the program does never changes the run or the exit status: a failure is
// logged, and the condition is not notified again either way.
//
// rs is the run's handle, through which the change a pending approval
// would make is shown; nil means the run the command line names (run,
// step), a worker passes the run it holds.
func (a *app) notifyAfter(opts notifyOptions, rs runstore.RunStore, r *runstore.Run, err error) {
	if opts.Program == "" || a.cfg.NoLoadState || r == nil || r.Driver == nil {
		return
	}
	if err != nil && !errors.Is(err, kernel.ErrFaulted) {
		return
	}
	al := r.Driver.Alert()
	if al == nil {
		return
	}
	fp := failpoint(a.getenv("ACR_FAILPOINT"))
	if fp != nil {
		fp("before-notify")
	}
	st := r.Driver.State()
	ctx := context.Background() // an interrupted run still tells its person
	change := func(p state.PendingApproval) string {
		text, err := a.shownChange(ctx, rs, st, p)
		if err != nil {
			return "" // the document says: empty when it could not be shown
		}
		return text
	}
	doc := notify.Build(al, a.cfg.Store, state.FormatTime(a.now()), pendingAction, change)
	var pass []string
	for _, kv := range os.Environ() {
		if name, _, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, notifyEnvPrefix) {
			pass = append(pass, name)
		}
	}
	slices.Sort(pass)
	env := command.Environment(os.LookupEnv, pass, map[string]string{"ACR_RUN_ID": al.RunID})
	serr := notify.Send(ctx, notify.Program{Argv: []string{opts.Program}, Env: env}, doc)
	detail := ""
	if serr != nil {
		detail = serr.Error()
		a.log.Error().Str("run_id", al.RunID).Str("kind", al.Kind).Str("program", opts.Program).Err(serr).
			Msg("notify program failed; the run is not affected, and this condition is not notified again")
	} else {
		a.log.Info().Str("run_id", al.RunID).Str("kind", al.Kind).Str("id", string(al.Key)).Msg("notified")
	}
	if rerr := r.Driver.Notified(al, opts.Program, serr == nil, detail); rerr != nil {
		a.log.Error().Str("run_id", al.RunID).Err(rerr).Msg("could not record the notification; the next run may notify this condition again")
		return
	}
	if fp != nil {
		fp("after-notify")
	}
}
