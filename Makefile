# nsprof developer entry points. `make test` is what CI runs (.ci/run).

GO       ?= go
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
FUZZTIME ?= 10s
# Go minimizes each new interesting input for up to 60 s by default; with
# the ELF seeds of symbol/ (50-70 KB) that stalls a short run entirely.
FUZZMINIMIZETIME ?= 5s
# Fuzzing time per target in `make test` (fuzz-smoke): a smoke run that
# catches a target that no longer builds or crashes early; `make fuzz` is
# the long run.
SMOKE_FUZZTIME ?= 3s
BUILD    := build

# Tests read CI=true to turn skips for missing privileges or tools into
# failures; pass it on from the environment or the make command line.
export CI

# Fails listing the files gofmt would change (testdata holds fixtures).
FMT_CHECK = files=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' | xargs gofmt -l); \
	if [ -n "$$files" ]; then echo "gofmt -l lists files to format:"; echo "$$files"; exit 1; fi

# Fails showing the diff `go mod tidy` would make to go.mod and go.sum.
TIDY_CHECK = $(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

# The race detector runs over the packages whose tests need no root, perf
# events, namespaces or containers (checked by running them as nobody),
# less RACE_SKIP: the few tests there that do need root, and single-threaded
# DWARF/objdump comparisons that take minutes under -race and exercise no
# concurrency. record, perf, container, cmd/nsprof and e2e need root
# throughout.
# cmd/nsprof's tests of the commands only nsprof-otlp has (build tag otlp).
OTLP_TESTS = ^(TestAgent|TestPush)

RACE_PKGS = ./analyze ./capture ./export ./internal/gcpace ./internal/gopclntab ./internal/outfile ./internal/procfmt ./internal/progress \
	./internal/testutils ./internal/textsafe ./proc ./report ./symbol ./symcache ./unwind ./web
RACE_SKIP = ^(TestKallsymsHost|TestKallsymsExcerpt|TestUnwindLive|TestReplaceInStickyDir|TestReadDWARFMatchesDebugElf|TestGoLinesMatchDWARF|TestSparseUnitsMatchFull|TestSparseUnitsGiveWay|TestAfterCallObjdump)$$

.PHONY: all build preload demo test deps otelcol vet fmt-check tidy-check race fuzz fuzz-smoke bench clean

all: build

# nsprof is linked statically (no cgo: only package net would use it, for
# the C resolver): no libc to load, 1.5-3 MB less resident memory for a
# recording and a report.
#
# nsprof-otlp is nsprof with the OTLP client (tag otlp): nsprof runs it for
# agent and push, so that the other commands neither initialize nor map
# that client's gRPC, protobuf and pdata code (README, "Two binaries").
build: preload
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o bin/nsprof ./cmd/nsprof
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -tags otlp -o bin/nsprof-otlp ./cmd/nsprof

# The memprof LD_PRELOAD library (the only C in the product), found by
# nsprof next to its executable. Frame pointers: its stack walk starts in
# its own hooks.
CC ?= cc
PRELOAD_CFLAGS ?= -O2 -g -Wall -Wextra
preload: bin/libnsprof-memprof.so bin/libnsprof-speedtrack.so
bin/libnsprof-memprof.so: preload/memprof.c preload/calls.c preload/memprof.h
	@mkdir -p bin
	$(CC) $(PRELOAD_CFLAGS) -fPIC -shared -fno-omit-frame-pointer -fvisibility=hidden -pthread -o $@ preload/memprof.c -ldl -lm
# The --speedtrack fallback where user probes cannot be placed.
bin/libnsprof-speedtrack.so: preload/speedtrack.c
	@mkdir -p bin
	$(CC) $(PRELOAD_CFLAGS) -fPIC -shared -fvisibility=hidden -o $@ preload/speedtrack.c -ldl

# The demo runs the main job: `nsprof record` (as root) on a bundled Go
# program that also adds its own marks, counters and logs through
# SYSPROF_TRACE_FD, then inspects the capture and merges it with one the
# program wrote by itself, and reports on it from the symbols bundled in
# the capture. Grow it with the product: export belongs here as it lands.
demo: build
	mkdir -p $(BUILD)
	$(GO) build -o $(BUILD)/tracefd-demo ./examples/tracefd-demo
	@echo '== nsprof record --use-trace-fd -f -o $(BUILD)/demo.syscap -- $(BUILD)/tracefd-demo'
	@bin/nsprof record --use-trace-fd -f -o $(BUILD)/demo.syscap -- $(BUILD)/tracefd-demo
	@echo '== nsprof dump --summary $(BUILD)/demo.syscap'
	@bin/nsprof dump --summary $(BUILD)/demo.syscap
	@echo '== nsprof dump --type PROCESS,MARK $(BUILD)/demo.syscap'
	@bin/nsprof dump --type PROCESS,MARK $(BUILD)/demo.syscap
	@echo '== nsprof dump --files $(BUILD)/demo.syscap'
	@bin/nsprof dump --files $(BUILD)/demo.syscap
	@echo '== nsprof report --limit 15 $(BUILD)/demo.syscap'
	@bin/nsprof report --limit 15 $(BUILD)/demo.syscap
	@echo '== nsprof report --tree --depth 8 --min-percent 5 $(BUILD)/demo.syscap'
	@bin/nsprof report --tree --depth 8 --min-percent 5 $(BUILD)/demo.syscap
	@echo '== nsprof report --marks / --counters / --summary $(BUILD)/demo.syscap'
	@bin/nsprof report --marks $(BUILD)/demo.syscap
	@bin/nsprof report --counters $(BUILD)/demo.syscap
	@bin/nsprof report --summary $(BUILD)/demo.syscap
	@echo '== nsprof export $(BUILD)/demo.syscap --format pprof|speedscope|folded|svg -f -o $(BUILD)/demo.*'
	@bin/nsprof export $(BUILD)/demo.syscap --format pprof -f -o $(BUILD)/demo.pb.gz
	@bin/nsprof export $(BUILD)/demo.syscap --format speedscope -f -o $(BUILD)/demo.speedscope.json
	@bin/nsprof export $(BUILD)/demo.syscap --format folded -f -o $(BUILD)/demo.folded
	@bin/nsprof export $(BUILD)/demo.syscap --format svg -f -o $(BUILD)/demo.svg
	$(GO) tool pprof -top -nodecount 10 $(BUILD)/demo.pb.gz
	@echo '== nsprof record -f -o $(BUILD)/demo-sort4m.syscap -- $(BUILD)/tracefd-demo -sort 4000000'
	@bin/nsprof record --use-trace-fd -f -o $(BUILD)/demo-sort4m.syscap -- $(BUILD)/tracefd-demo -sort 4000000
	@echo '== nsprof report --diff-base $(BUILD)/demo.syscap $(BUILD)/demo-sort4m.syscap --limit 10'
	@bin/nsprof report --diff-base $(BUILD)/demo.syscap $(BUILD)/demo-sort4m.syscap --limit 10
	env -u SYSPROF_TRACE_FD $(BUILD)/tracefd-demo -o $(BUILD)/demo-self.syscap
	@echo '== nsprof cat $(BUILD)/demo.syscap $(BUILD)/demo-self.syscap -f -o $(BUILD)/demo-merged.syscap'
	@bin/nsprof cat $(BUILD)/demo.syscap $(BUILD)/demo-self.syscap -f -o $(BUILD)/demo-merged.syscap
	@echo '== nsprof dump --summary $(BUILD)/demo-merged.syscap'
	@bin/nsprof dump --summary $(BUILD)/demo-merged.syscap
	@bash scripts/demo-container.sh $(BUILD)

# deps and the tests' collector, then vet, the gofmt and go.mod checks, every test, the race
# detector and a fuzz smoke run, in that order.
test: deps otelcol
	$(GO) vet ./...
	$(GO) vet -tags otlp ./cmd/nsprof
	@$(FMT_CHECK)
	@$(TIDY_CHECK)
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -tags otlp -run '$(OTLP_TESTS)' ./cmd/nsprof
	$(GO) test -count=1 -race -skip '$(RACE_SKIP)' $(RACE_PKGS)
	@FUZZTIME=$(SMOKE_FUZZTIME) FUZZMINIMIZETIME=$(FUZZMINIMIZETIME) GO=$(GO) bash scripts/fuzz.sh

# Builds the OpenTelemetry Collector the OTLP tests push profiles to, once:
# cached under ~/.cache/nsprof by its config's hash (cold about 5 min on 2
# loaded cores, then instant). Building it here keeps that out of go
# test's timeout; the tests build it themselves when it is missing.
otelcol:
	@GO=$(GO) bash scripts/build-otelcol.sh >/dev/null

# Installs the Debian packages the tests need (only those missing).
deps:
	bash scripts/install-deps.sh

vet:
	$(GO) vet ./...
	$(GO) vet -tags otlp ./cmd/nsprof

fmt-check:
	@$(FMT_CHECK)

tidy-check:
	@$(TIDY_CHECK)

race:
	$(GO) test -count=1 -race -skip '$(RACE_SKIP)' $(RACE_PKGS)

# Runs every Fuzz* target for FUZZTIME each (default 10s); scripts/fuzz.sh
# says how it tells Go's fuzz-coordinator race from a crasher.
fuzz:
	@FUZZTIME=$(FUZZTIME) FUZZMINIMIZETIME=$(FUZZMINIMIZETIME) GO=$(GO) bash scripts/fuzz.sh

# Every Fuzz* target for SMOKE_FUZZTIME each, as `make test` runs them.
fuzz-smoke:
	@FUZZTIME=$(SMOKE_FUZZTIME) FUZZMINIMIZETIME=$(FUZZMINIMIZETIME) GO=$(GO) bash scripts/fuzz.sh

# Runs the benchmark scripts in bench/.
bench: build
	@set -e; found=; \
	for s in bench/*.sh; do \
		[ -f "$$s" ] || continue; found=1; \
		echo "== $$s"; bash "$$s"; \
	done; \
	[ -n "$$found" ] || echo "no bench/*.sh scripts yet"

clean:
	rm -rf bin $(BUILD)
