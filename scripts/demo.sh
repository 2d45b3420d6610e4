#!/usr/bin/env bash
# The quickstart, end to end: init once, let the loop work until it needs a
# person, approve the one action the contract puts behind approval, let it
# finish, and show where it stands. Safe to rerun: it starts from scratch.
set -euo pipefail
acr=${1:-bin/acr}
dir=${2:-.demo_state}
ex=scenarios/quickstart
rm -rf "$dir"
say() { printf '\n$ %s\n' "$*"; }

say acr init --goal $ex/goal.json --contract $ex/contract.json --env $ex/environment.json
"$acr" --state-dir "$dir" init --goal $ex/goal.json --contract $ex/contract.json --env $ex/environment.json

say acr run --max-cycles 20
"$acr" --state-dir "$dir" run --max-cycles 20

ref=$("$acr" --state-dir "$dir" status --json | sed -n 's/.*"pending_approvals":\[{[^]]*"ref":"\([^"]*\)".*/\1/p')
if [ -z "$ref" ]; then echo "demo: expected a pending approval" >&2; exit 1; fi
say acr approve "$ref"
"$acr" --state-dir "$dir" approve "$ref"

say acr run --max-cycles 20
"$acr" --state-dir "$dir" run --max-cycles 20

say acr run --max-cycles 20   "# nothing to do: no cycle, nothing written"
"$acr" --state-dir "$dir" run --max-cycles 20

say acr status
"$acr" --state-dir "$dir" status

say acr ledger verify
"$acr" --state-dir "$dir" ledger verify

printf '\nThe sandbox world after the run (%s/sandbox/world):\n' "$dir"
for f in README.md config/app.ini vendor/lib.js; do printf -- '--- %s\n' "$f"; cat "$dir/sandbox/world/$f"; done

printf '\ndemo: the binary is %s and the run is in %s.\n' "$acr" "$dir"
printf 'Put acr on your PATH with make install (or go install ./cmd/acr), then: acr --state-dir %s status\n' "$dir"
