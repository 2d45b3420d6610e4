#!/usr/bin/env bash
# The git example, end to end: a bare repository made on the fly from
# examples/git-project/project is the world. acr fixes a typo on its own
# branch without asking, waits for approval of a gofmt -w fix, and after
# approval the branch has one commit per effect (trailers Acr-Run,
# Acr-Cycle, Acr-Intent, Acr-Idempotency-Key) while main has not moved.
# Safe to rerun: it starts from a fresh repository.
set -euo pipefail
acr=${1:-bin/acr}
dir=${2:-.example_git}
rm -rf "$dir"
mkdir -p "$dir"
cp examples/git-project/*.json "$dir/"
remote=$dir/remote.git
state=$dir/state
say() { printf '\n$ %s\n' "$*"; }

git init -q --bare "$remote"
seed=$dir/seed
cp -R examples/git-project/project "$seed"
# main.go is unformatted on purpose (the gofmt fix's work); the repository
# keeps it under a name gofmt does not read.
mv "$seed/main.go.planted" "$seed/main.go"
git -C "$seed" init -q
git -C "$seed" add -A
git -C "$seed" -c user.name=example -c user.email=example@localhost commit -q -m "greeter: first version"
git -C "$seed" push -q ../remote.git HEAD:refs/heads/main
base=$(git -C "$remote" rev-parse refs/heads/main)

say acr init --goal goal.json --contract contract.json --env environment.json
"$acr" --state-dir "$state" init --goal "$dir/goal.json" --contract "$dir/contract.json" --env "$dir/environment.json"

say acr run --max-cycles 20
"$acr" --state-dir "$state" run --max-cycles 20

say acr status
"$acr" --state-dir "$state" status
ref=$("$acr" --state-dir "$state" status --json | sed -n 's/.*"pending_approvals":\[{[^]]*"ref":"\([^"]*\)".*/\1/p')
if [ -z "$ref" ]; then echo "example-git: expected the gofmt -w fix to wait for approval" >&2; exit 1; fi
say acr approve "$ref"
"$acr" --state-dir "$state" approve "$ref"

say acr run --max-cycles 20
"$acr" --state-dir "$state" run --max-cycles 20

say git log acr/tidy
git -C "$remote" log --format='%h %s%n%(trailers:only)' refs/heads/acr/tidy

say acr audit 3   "# the command fix: its commit and tree, from the ledger alone"
"$acr" --state-dir "$state" audit 3 | sed -n '/^outcome/,/key/p'

say acr replay --verify
"$acr" --state-dir "$state" replay --verify

keys=$(git -C "$remote" log --format='%(trailers:key=Acr-Idempotency-Key,valueonly)' refs/heads/acr/tidy | grep -c . || true)
if [ "$keys" != 2 ]; then echo "example-git: expected 2 effect commits on acr/tidy, found $keys" >&2; exit 1; fi
if [ "$(git -C "$remote" log --format='%(trailers:key=Acr-Idempotency-Key,valueonly)' refs/heads/acr/tidy | grep . | sort | uniq -d)" != "" ]; then
  echo "example-git: a key appears twice" >&2; exit 1
fi
if [ "$(git -C "$remote" rev-parse refs/heads/main)" != "$base" ]; then echo "example-git: main moved" >&2; exit 1; fi
if git -C "$remote" show refs/heads/acr/tidy:README.md | grep -q 'teh '; then echo "example-git: the typo is still there" >&2; exit 1; fi
tree=$(mktemp -d)
git -C "$remote" archive refs/heads/acr/tidy | tar -x -C "$tree"
if [ -n "$(gofmt -l "$tree")" ]; then echo "example-git: the branch is not gofmt-clean" >&2; rm -rf "$tree"; exit 1; fi
rm -rf "$tree"
printf '\nacr/tidy: 2 commits, one per effect, typo-free and gofmt-clean; main unmoved.\n'
