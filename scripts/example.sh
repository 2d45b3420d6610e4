#!/usr/bin/env bash
# The real-work example, end to end: acr looks after a copy of
# examples/go-project/project in place. Command checks (gofmt, go vet), a
# command fix (gofmt -w), a declared patch, a proposer for what no declared
# fix covers (a model when ACR_LLM_URL and ACR_LLM_MODEL are set, prepared
# answers otherwise), and a person's approval before go.mod changes. Safe to
# rerun: it starts from a fresh copy.
set -euo pipefail
acr=${1:-bin/acr}
dir=${2:-.example_state}
rm -rf "$dir"
mkdir -p "$dir"
cp -R examples/go-project "$dir/go-project"
ex=$dir/go-project
# main.go is kept unformatted on purpose (a defect for acr to find), so the
# repository holds it under a name gofmt does not read; the copy gets its
# real name, and so does the pristine copy the final diff compares with.
mv "$ex/project/main.go.planted" "$ex/project/main.go"
cp -R "$ex/project" "$dir/as-shipped"
state=$dir/state
# propose.sh finds the built proposers here (the contract passes the name).
ACR_PROPOSER_BIN=$(cd "$(dirname "$acr")" && pwd)
export ACR_PROPOSER_BIN
say() { printf '\n$ %s\n' "$*"; }

say acr init --goal $ex/goal.json --contract $ex/contract.json --env $ex/environment.json
"$acr" --state-dir "$state" init --goal "$ex/goal.json" --contract "$ex/contract.json" --env "$ex/environment.json"

say acr run --max-cycles 20
"$acr" --state-dir "$state" run --max-cycles 20

ref=$("$acr" --state-dir "$state" status --json | sed -n 's/.*"pending_approvals":\[{[^]]*"ref":"\([^"]*\)".*/\1/p')
if [ -z "$ref" ]; then echo "example: expected the go.mod change to wait for approval" >&2; exit 1; fi
say acr approve "$ref"
"$acr" --state-dir "$state" approve "$ref"

say acr run --max-cycles 20
"$acr" --state-dir "$state" run --max-cycles 20

say acr status
"$acr" --state-dir "$state" status

say acr audit 2   "# the proposer's answer, the critic, governance, the effect and its evaluation"
"$acr" --state-dir "$state" audit 2 | sed -n '1,20p'

say acr replay --verify   "# re-derives every cycle from the ledger: no command and no proposer runs"
"$acr" --state-dir "$state" replay --verify

printf '\nWhat acr changed in the project (diff against examples/go-project/project):\n'
diff -ru "$dir/as-shipped" "$ex/project" || true

final=$("$acr" --state-dir "$state" status)
if ! grep -q '^world .* 0 of 4 checks failing' <<<"$final"; then
  echo "example: expected every check to pass in the end" >&2; exit 1
fi
