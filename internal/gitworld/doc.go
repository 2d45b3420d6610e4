// Package gitworld keeps a branch of a git repository as a run's world.
// The remote is the truth: the world is the tree at the head of the run's
// branch there, and each host that runs the run keeps a clone of it as a
// cache under its state directory (Open). Checks run in the clone's work
// tree checked out at the branch head (Sync). An effect is one commit on
// top of the head its intent recorded, pushed only if the branch is still
// there (a compare-and-swap on the ref, git push --force-with-lease): a
// push refused because someone else moved the branch is not an error but
// a stale outcome, after which the loop observes the new head and decides
// again (Apply).
//
// Exactly once, from the remote: every effect's commit carries the
// trailers Acr-Run, Acr-Cycle, Acr-Intent and Acr-Idempotency-Key. Before
// it changes anything, Apply asks the remote for a commit after the
// recorded head carrying the effect's key; one found means the effect
// happened (it is reported, never pushed again), none means it did not,
// and the effect is carried out from a clean work tree at the recorded
// head (whatever an interrupted attempt left in the work tree or in the
// local clone is discarded). A kill between the commit and the push, or
// between the push and the outcome's record, therefore ends with the
// effect on the branch once.
//
// acr runs the git program the way it runs every program (package
// command: a scrubbed environment with the spec's pass_env, so ssh keys,
// agents and credential helpers work as they do for the person; its own
// process group; a timeout). Repository hooks never run
// (core.hooksPath=/dev/null), commits are never signed, and nothing asks
// on a terminal (GIT_TERMINAL_PROMPT=0). The base branch is never
// written: the only ref acr pushes is the run's branch. Supported: git
// 2.25 or newer (trailer formats in git log, push --porcelain with
// --force-with-lease).
package gitworld
