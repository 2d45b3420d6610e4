#!/usr/bin/env bash
# Runs every fuzz target in the module for a short budget each.
#
# The budget is an execution count (`20000x`) by default: with a duration
# (`10s`) Go 1.26's fuzz coordinator can report "context deadline exceeded"
# at the deadline on a busy machine although no input failed
# (go.dev/issue/75804), and a count has no deadline to race.
set -euo pipefail
t=${1:-20000x}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
    echo "fuzz $pkg $target ($t)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" "$pkg"
  done
done
