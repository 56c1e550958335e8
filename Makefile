# p2patomics: `make run` runs the suite, `make test` runs every check CI runs
# but fleet-kube (.ci/run runs it after make test: see its target).
# Both need Go >= 1.26 on PATH; as root they install missing Debian packages,
# otherwise they print the apt-get line.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
GO    ?= go
ARGS  ?=
OUT   := $(CURDIR)/out
# make test's own suite runs (host/, gate/, soak/, ...) live here, never in
# the user's out/: a CI job collecting out/**/junit.xml must not take the
# checks' deliberately red runs for its own.
CHECKS := $(CURDIR)/out-checks
ABI   := $(CURDIR)/.cache/amd-headers/abi
export CGO_ENABLED := 0

# make test's checks, in order: one name each, each also a target of its
# own (make cli reruns one). scripts/phases.sh prints a line when each
# starts and one with its time when it ends, and a line at least every 30 s
# while one is silent; the last line is "make test: all N checks passed in
# T s" or names the check that failed.
TEST_PHASES := deps vet build runner unit suite ginkgo cli docs gate gate-selftest firstrun schema rounds soak fuzz mutate fleet-slurm

# Count-based fuzz budgets (a time budget hits golang/go#75804, the fuzz
# coordinator's "context deadline exceeded", on a loaded machine).
FUZZ_N ?= 2000x

.PHONY: run test check-go deps kernels vet build runner unit suite ginkgo cli docs gate firstrun schema rounds soak fuzz bench bench-hangs bench-suite device-build amd-first-run mutate fleet-slurm fleet-kube $(TEST_PHASES)

test:
	@bash scripts/phases.sh $(TEST_PHASES)

check-go:
	@command -v $(GO) >/dev/null 2>&1 || { echo "p2patomics: Go >= 1.26 is not on PATH (install it from go.dev/dl, add /usr/local/go/bin to PATH)" >&2; exit 1; }
	@v=$$($(GO) env GOVERSION | sed 's/^go//'); maj=$${v%%.*}; rest=$${v#*.}; min=$${rest%%.*}; \
	 if [ "$$maj" -lt 1 ] || { [ "$$maj" -eq 1 ] && [ "$$min" -lt 26 ]; }; then echo "p2patomics: Go $$v found, Go >= 1.26 needed" >&2; exit 1; fi

# check-go is order-only: it runs first, but being phony it must not make
# the binary out of date (every make run relinked). The commit goes into
# results.json's harness.commit (-buildvcs is off in some environments).
bin/specs.test: $(shell find . -name '*.go' -not -path './.cache/*') $(wildcard kernels/obj/*) go.mod go.sum | check-go
	@mkdir -p bin
	@echo "building bin/specs.test: go test -c ./specs (with empty caches this fetches and compiles Ginkgo, Gomega, purego, x/sys first; README.md says how long)"
	@bash scripts/progress.sh "building bin/specs.test" $(GO) test -c -o $@ \
	  -ldflags "-X p2patomics/harness/fingerprint.Commit=$$(git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)" ./specs
	@echo "built bin/specs.test"

build: bin/specs.test

# The default suite on every GPU backend that loads, else the host backend.
# The suite moves an older run's out/ aside to out.prev/ and refuses a
# folder that is not a run (docs/FAULTS.md); make never marks one as a run.
# make exits 2 for any failing recipe, so the suite's own status (0 PASS,
# 1 FAIL, 2 usage, 3 reports not written, 4 INTERRUPTED) is the last line
# and out/exit_status; scripts/run passes it through as its own. The
# status goes into out/ only when this run made it (a new marker there):
# a suite that refused before touching out/ leaves the previous run's
# folder as it was, never a 2 beside its PASS results.json.
run: bin/specs.test
	@m="$(OUT)/.p2patomics-out"; was=$$(stat -c %d:%i "$$m" 2>/dev/null); rc=0; \
	 ./bin/specs.test --backend=auto --out="$(OUT)" $(ARGS) || rc=$$?; \
	 now=$$(stat -c %d:%i "$$m" 2>/dev/null); \
	 if [ -n "$$now" ] && [ "$$now" != "$$was" ]; then echo $$rc >"$(OUT)/exit_status"; where="in $(OUT)/exit_status"; \
	 else where="not written to $(OUT): the suite refused before it touched it"; fi; \
	 echo "make run: the suite exited $$rc ($$where; make itself exits 2 for any non-zero status, scripts/run passes it through)"; \
	 exit $$rc

# Debian packages the checks need: the pinned clang-19 for the kernel
# rebuild check, the ROCm headers/libraries for the AMD ABI checks, and
# Chromium for the report's browser test (it skips without one).
deps: check-go
	@bash scripts/install-clang.sh
	@bash scripts/amd-headers.sh | tail -n 1
	@bash scripts/install-chromium.sh

kernels: check-go
	bash scripts/build-kernels.sh

vet: check-go
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed: $$bad" >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) run ./internal/binding/genarity -check

# make test's own machinery: the phase lines, the closing line, a failing
# check named, and no relink of bin/specs.test when nothing changed.
runner: check-go
	bash scripts/check-phases.sh

# go test ./..., as a newcomer runs it: the package tests (kernels: rebuild
# + scope proofs; AMD: header ABI) and the specs package, which is the host
# suite on a machine without a GPU (its folder: out-checks/gotest). -timeout=30m:
# the kernels package took 317 s of go test's default 10 min at load 20-35.
# go test prints a package's line only when the package ends, so a start
# line says what the long ones are, and progress.sh says "still running"
# whenever it has been quiet for 25 s (issue 38 item 10: the kernels
# package was ~30 s of nothing).
unit: check-go
	@echo "unit: go test ./...: start (the long packages: kernels, ~30 s on two cores: the kernel rebuild with clang-19 and the planted scope bugs; specs: the host suite; each package's line comes when it ends)"
	P2PAT_AMD_ABI="$(ABI)" P2PAT_OUT="$(CHECKS)/gotest" bash scripts/progress.sh "unit: go test ./..." $(GO) test -count=1 -timeout=30m ./...

# The whole host suite, canaries and planted bugs included: exit 0 means
# every case met its expected outcome. (make ginkgo runs it through the
# Ginkgo CLI too; its repro.sh files would name the CLI's temporary build.)
suite: bin/specs.test
	rm -rf "$(CHECKS)/host"
	./bin/specs.test --backend=host --out="$(CHECKS)/host"
	P2PAT_RESULTS="$(CHECKS)/host/results.json" $(GO) test -count=1 -run Schema ./harness/report
	bash scripts/check-evidence.sh ./bin/specs.test "$(CHECKS)/host"

# Every bad input is one line on stderr and exit 2.
cli: bin/specs.test
	bash scripts/check-cli.sh ./bin/specs.test

# The case counts README.md and docs/ state about today's catalogue are
# generated from --list, and the exit statuses their tables and examples
# state from the Exit* constants (bash scripts/docs-numbers.sh
# bin/specs.test rewrites them); a stale one fails here.
docs: bin/specs.test
	bash scripts/docs-numbers.sh --check ./bin/specs.test
	bash scripts/check-results-size.sh

# The suite through the Ginkgo CLI as a newcomer runs it (go tool ginkgo
# ./specs -- --backend=host, the whole suite), and the CLI's own flags:
# --label-filter and --focus narrow the plan, -p is refused in one line.
ginkgo: check-go
	bash scripts/check-ginkgo.sh "$(CHECKS)/ginkgo"

# Gate the host run against the committed host baseline, and show that a
# planted regression fails the gate.
gate: bin/specs.test
	bash scripts/check-gate.sh ./bin/specs.test "$(CHECKS)/gate"

# The gate against injected driver faults: each rule kind must FAIL it
# (scripts/gate-selftest.sh, docs/FAULTS.md).
.PHONY: gate-selftest
gate-selftest: bin/specs.test
	bash scripts/gate-selftest.sh ./bin/specs.test "$(CHECKS)/gate-selftest"

# The AMD first-run script's logic, on the host backend with a fake
# rocminfo (scripts/check-amd-first-run.sh).
firstrun: bin/specs.test
	bash scripts/check-amd-first-run.sh ./bin/specs.test "$(CHECKS)/firstrun"

# On an AMD machine: the first run, everything the project needs in one
# archive to send back (docs/AMD.md, "The first run").
amd-first-run: bin/specs.test
	P2PAT_SPECS="$(CURDIR)/bin/specs.test" bash scripts/amd-first-run.sh $(ARGS)

# Schema check of every committed device run too.
schema: check-go
	P2PAT_RESULTS=$$(ls "$(CURDIR)"/results/*/results.json "$(CURDIR)"/results/*/results.json.gz 2>/dev/null | paste -sd:) $(GO) test -count=1 -run Schema ./harness/report

# Per-pair cases in rounds give the verdicts of one pair at a time (8 ranks).
rounds: bin/specs.test
	bash scripts/check-rounds.sh ./bin/specs.test "$(CHECKS)/rounds"


# The fault-injection soak (docs/FAULTS.md): host runs, each with a rank or
# the suite signalled or --out nearly full, every invariant checked after
# each run. Fixed seeds and a count of runs, so make test gives the same
# answer every time: an even seed runs owner-dies-peer-stopped, an odd one
# expected-fail-then-hang; 1796284658885865006 is a regression seed (issue
# 38: a scenario that could not reach its rank judged the case's own kill).
# Random seeds are make soak-sweep's, outside make test.
# --runs=9: each seed's first pass, every scenario once (about 45 s a seed
# on two cores, most of it the hang scenario's deadline).
SOAK_SEEDS ?= 1796284658885865006 1
SOAK_RUNS  ?= 9
soak: bin/specs.test
	@for seed in $(SOAK_SEEDS); do \
	  $(GO) run ./cmd/p2psoak --specs=./bin/specs.test --out="$(CHECKS)/soak/$$seed" --seed=$$seed --runs=$(SOAK_RUNS) || exit 1; \
	done

# The soak over SEEDS random seeds (not in make test: about 15-60 s a seed
# on two cores), SWEEP_RUNS runs each (the first pass and random ones). A
# failing seed's runs stay in out-checks/soak-sweep/SEED.
SEEDS ?= 20
SWEEP_RUNS ?= 12
.PHONY: soak-sweep
soak-sweep: bin/specs.test
	bash scripts/soak-sweep.sh ./bin/specs.test "$(CHECKS)/soak-sweep" $(SEEDS) $(SWEEP_RUNS)

# The verification mutation score (docs/FAULTS.md): every passing case, run
# again with each kernel it launches dropped by the injector, must not pass.
# p2pmutate says when its healthy run starts and as each mutated run ends;
# progress.sh covers the go run build before it.
mutate: bin/specs.test
	@echo "mutate: p2pmutate on the host backend: start (go run builds it, then a healthy --trace run and the mutated runs)"
	bash scripts/progress.sh "mutate" $(GO) run ./cmd/p2pmutate --specs=./bin/specs.test --out="$(CHECKS)/mutate"

# A short run of each fuzz target (the wire decoder, the rank's request
# handling), $(FUZZ_N) inputs each; `go test -fuzz` keeps what it finds
# under testdata/fuzz.
fuzz: check-go
	$(GO) test -run '^$$' -fuzz '^FuzzRecv$$' -fuzztime $(FUZZ_N) ./wire
	$(GO) test -run '^$$' -fuzz '^FuzzHandle$$' -fuzztime $(FUZZ_N) ./rank

# Each fleet engine's live check is its folder's check.sh
# (scripts/fleet/<engine>/check.sh; docs/FLEET.md "Checked in CI"): make
# fleet-<engine> runs it, so an engine's folder brings its target.
# fleet-slurm: the recipe on a live one-host Slurm cluster (installs
# slurm-wlm and munge as root), a phase of make test.
# fleet-kubernetes (fleet-kube for short): the manifests through the API
# server's create path and the Job's container started as a kubelet would
# (podman), merged from its kubectl logs form. Not in make test: the
# validator's cold build (k8s.io/kubernetes, about 1000 packages) takes 4-5
# min on two cores; .ci/run runs it as its own step after make test. Warm,
# about 20 s.
FLEET_CHECKS := $(patsubst scripts/fleet/%/check.sh,fleet-%,$(wildcard scripts/fleet/*/check.sh))
.PHONY: $(FLEET_CHECKS)
$(FLEET_CHECKS): fleet-%: bin/specs.test
	bash scripts/fleet/$*/check.sh ./bin/specs.test "$(CHECKS)/fleet-$*"
fleet-kube: fleet-kubernetes

bench: check-go
	$(GO) test -run '^$$' -bench . -benchtime=20x ./harness ./wire ./rank/host ./trace

# Time to verdict under each hang rule against the healthy gated time of
# the same invocation (issue 48; docs/PERFORMANCE.md, "A wedged call").
# A benchmark: minutes, not part of make test. RUNS, PAUSE, RULES, BASE.
bench-hangs: check-go
	bash scripts/bench-hangs.sh

# The host suite at HEAD timed against BENCH_BASE's binary (default 6615a8b),
# RUNS pairs (default 5), and where its time went from its own records
# (issue 52; docs/PERFORMANCE.md). A benchmark: minutes, not in make test.
BENCH_BASE ?= 6615a8b
bench-suite: bin/specs.test
	RUNS=$(or $(RUNS),5) bash scripts/bench-suite.sh ./bin/specs.test $(BENCH_BASE)

device-build: check-go
	bash scripts/build-specs.sh .dev/specs.test
