# acr — build, demo, tests. Everything needs only Go (see README.md).
GO       ?= go
BIN      := bin/acr
DEMO_DIR ?= $(CURDIR)/.demo_state
FUZZTIME ?= 50000x

.PHONY: build install demo example example-git proposers test test-short lint fuzz bench bench-quick bench-peers bench-workers crash chaos fsync-mutants validate release-manifest mutants mutants-quick man clean

build:
	$(GO) build -o $(BIN) ./cmd/acr

# Put acr on the PATH. Without PREFIX: go install ./cmd/acr, into GOBIN
# (else GOPATH/bin, usually ~/go/bin). With PREFIX (e.g. sudo make install
# PREFIX=/usr/local): $(DESTDIR)$(PREFIX)/bin/acr and a man page per command
# in $(DESTDIR)$(PREFIX)/share/man/man1.
PREFIX ?=
install:
ifeq ($(PREFIX),)
	$(GO) install ./cmd/acr
	@bin=$$($(GO) env GOBIN); [ -n "$$bin" ] || bin=$$($(GO) env GOPATH)/bin; \
	echo "installed $$bin/acr"; \
	case ":$$PATH:" in *":$$bin:"*) ;; *) echo "note: $$bin is not on your PATH; add it, or: sudo make install PREFIX=/usr/local" ;; esac
else
	$(GO) build -o $(BIN) ./cmd/acr
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/acr
	$(BIN) man --dir $(DESTDIR)$(PREFIX)/share/man/man1 >/dev/null
	@echo "installed $(DESTDIR)$(PREFIX)/bin/acr and its man pages"
endif

# The main job on the shipped example: init, run until it waits for approval,
# approve, run again until it idles, then show the status.
demo: build
	@scripts/demo.sh $(BIN) $(DEMO_DIR)

# The real-work example: acr looks after a copy of a small Go module in
# place, with command checks, a command fix, a proposer and an approval.
EXAMPLE_DIR ?= $(CURDIR)/.example_state
example: build proposers
	@scripts/example.sh $(BIN) $(EXAMPLE_DIR)

# The git example: a bare repository made on the fly is the world; each
# effect is one commit on the run's own branch (docs/providers.md).
example-git: build
	@scripts/example-git.sh $(BIN) .example_git

# The example proposers: one asks any OpenAI-compatible endpoint, one
# answers from a file of prepared proposals.
proposers:
	$(GO) build -o bin/openai-compatible-proposer ./examples/proposers/openai-compatible
	$(GO) build -o bin/canned-proposer ./examples/proposers/canned

# The full test suite, with the race detector. CI runs exactly this. The
# race detector needs cgo and a C compiler; without one the suite still
# runs, without -race, and says so.
RACE := $(shell CGO_ENABLED=1 $(GO) env CGO_ENABLED 2>/dev/null | grep -q 1 && command -v $${CC:-gcc} >/dev/null 2>&1 && echo -race)
test:
	@echo "make test: the whole suite, about five minutes on two cores; a line per package as each finishes"
	@[ -n "$(RACE)" ] || echo "note: no C compiler found, running tests without -race"
	CGO_ENABLED=$(if $(RACE),1,0) $(GO) test $(RACE) -count=1 -timeout 25m ./...

test-short:
	$(GO) test -short -count=1 ./...

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# A short pass over every fuzz target.
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

# The full crash harnesses: 1,000 SIGKILLs each at every failpoint and at
# random instants, on the sandbox world and on a real directory whose fixes
# are commands; `make test` runs a short version of the same tests.
CRASH_KILLS ?= 1000
crash:
	$(GO) test -count=1 -timeout 60m -run '^Test(Command|Git)?CrashHarness$$' -v ./cmd/acr -crash.kills=$(CRASH_KILLS) | grep -E 'crash harness|PASS|FAIL|ok'

# The fault suite at full size (docs/operations.md, "Testing it"): real
# nats-server processes (built from the version go.mod requires) and real
# workers under a paused server, a killed stream leader on a three-node
# cluster, cut connections, killed workers, SIGTERM; every run counted
# afterwards. make test runs it small. About 5 minutes on two cores.
chaos:
	$(GO) test -count=1 -timeout 30m -run '^TestFault' -v ./cmd/acr -fault.full | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|fault_test'

# Delete each fsync call site in turn, on a temporary copy of the tree, and
# run the power-loss tests against it: every deletion must make one fail or
# be listed, with its reason, in cmd/acr-fsync-mutants. 44 sites, about
# 20 s each for the ones it mutates: 10 to 15 minutes on two cores (-all
# also tries the listed sites; -only PATH narrows it).
fsync-mutants:
	$(GO) run ./cmd/acr-fsync-mutants

# Freeze the release: record the current schema/source hashes and every
# scenario's fingerprints, and write docs/PHASE12_VALIDATION.md. Run it on
# purpose after an intended change, and review the diff.
release-manifest: build
	$(BIN) validate --freeze --out docs

# Validate without freezing (what CI runs through make test, too).
validate: build
	$(BIN) validate --out docs

# The mutation suite (docs/scenarios.md): every mutant of internal/mutant
# applied to a temporary copy of the tree, one build each, then acr validate
# on it; fails if a mutant survives. About 6 minutes on an idle 2-core
# machine. mutants-quick (CI) runs the nine mutants of issue 17 behind
# switches in one build, about 2 minutes.
mutants:
	$(GO) run ./cmd/acr-mutants

mutants-quick:
	$(GO) run ./cmd/acr-mutants -quick -switched

# Go micro-benchmarks, then the whole-process targets of docs/PERFORMANCE.md,
# then the workers section (bench-workers).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	$(GO) run ./cmd/acr-perf -out docs/PERFORMANCE.md
	$(GO) run ./cmd/acr-perf -workers -acr $(BIN) -out docs/PERFORMANCE.md

# acr against DBOS Transact Go and LangGraph.js on the same work, whole
# processes alternated (PEERS/side-by-side.sh, see its README), then one
# more queue run for CPU and syscalls; writes the side-by-side section of
# docs/PERFORMANCE.md. The first run builds the DBOS loop and installs
# LangGraph (minutes); then about 5 minutes on two cores.
PEERS ?= ../shared/peers
bench-peers: build
	$(GO) run ./cmd/acr-perf -peers $(PEERS) -acr $(BIN)

# Aggregate durable cycles/s of 1, 2 and 4 acr worker processes (and one
# at --concurrency 4) on one NATS server (started by the harness, in a
# child process) against 1, 2 and 4 acr run loops over state directories,
# the same 40 runs each, alternated over 3 rounds; then the latency of
# acr wake from another process until the cycle that consumes it starts.
# Writes the workers section of docs/PERFORMANCE.md; about 3-5 minutes on
# two cores.
bench-workers: build
	$(GO) run ./cmd/acr-perf -workers -acr $(BIN) -out docs/PERFORMANCE.md

# The same harnesses with small sizes (check the harnesses, not the
# targets; nothing is written).
bench-quick: build
	$(GO) run ./cmd/acr-perf -quick
	$(GO) run ./cmd/acr-perf -workers -quick -acr $(BIN)

# One man page per command, generated from the command tree (the same
# source as --help) into man/: read one with man -l man/acr-run.1, install
# with cp man/*.1 /usr/local/share/man/man1/. Not kept in git, so that the
# pages can never disagree with the binary. SOURCE_DATE_EPOCH fixes the date.
man: build
	$(BIN) man --dir man

clean:
	rm -rf bin man $(DEMO_DIR) $(EXAMPLE_DIR) .example_git
