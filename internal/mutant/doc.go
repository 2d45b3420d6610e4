// Package mutant is acr's mutation suite: a catalogue of source mutations,
// each one a way the loop could break one of its promises (a wake signal
// that grants authority, a contract nobody checks, a budget overshot, an
// effect applied twice, ...), and the means to apply them to a temporary
// copy of the source tree, build that copy, and see whether `acr validate`
// notices.
//
// A mutation is a list of exact textual replacements. Apply fails loudly
// when a pattern no longer matches exactly once, so a change to the code
// under a mutant breaks the suite instead of silently testing nothing
// (TestCatalogueMatches runs in `make test` for that reason).
//
// A copy can carry one mutant as plain source (Apply: the mutated code, and
// nothing else, is what is built) or all of them at once behind a switch
// (ApplySwitched: each replacement is guarded by the ACR_MUTANT environment
// variable, so one build serves every mutant; with the variable unset the
// binary behaves exactly like the unmutated tree). `make mutants` uses the
// plain form, one build per mutant; the validator's counter-tests use the
// switched form, one build in all.
//
// A mutant is judged with the scenarios' frozen fingerprints blanked in the
// copy (as if they had been re-frozen after the change) and without a
// release manifest, so only behavioural evidence can kill it: a gate that
// fails, or a scenario that fails its own expectations.
package mutant
