# edgenf — see README.md. Every target installs what it needs first.
GO         ?= go
# CLANG names the compiler for the eBPF objects; unset, the first of clang,
# clang-14, clang-15, ... on PATH (bpf.Clang).
CLANG      ?=
TEST_FLAGS ?= -count=1 -p 2 -timeout 28m

.PHONY: all setup bpf build test soak demo demo-chain demo-clean bench bench-quick clean

all: build

setup:
	@./scripts/setup.sh

# Every *.bpf.c under internal/ and bench/ is built twice, for the XDP and
# the TC hook, into objects beside it that its Go package embeds. They are
# committed (a clone builds with plain go tooling); this target rebuilds
# them all, whatever the files' dates (after a merge, say). `make test`
# fails on objects that do not match their sources (bpf/bpf_test.go).
bpf: setup
	$(if $(CLANG),EDGENF_CLANG=$(CLANG)) $(GO) run ./bpf/gen

build: setup
	$(GO) build -o bin/ ./cmd/...

test: build
	@unformatted=$$(gofmt -l cmd internal bench test); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test $(TEST_FLAGS) ./...

# Randomized API churn by several tenants with traffic on every chain, for
# SOAK (minutes to hours); not part of test.
SOAK ?= 10m
soak: build
	EDGENF_SOAK=$(SOAK) $(GO) test -count=1 -v -run '^TestSoak$$' -timeout 0 ./test/e2e/

demo: build
	@./bin/edgenf-demo up

demo-chain: build
	@./bin/edgenf-demo chain

bench: build
	EDGENF_EXTERN_COST_OUT=bench/results/p4-extern-cost.md \
	  $(GO) test -run XXX -bench ExternCost -benchtime 1x ./internal/p4/stf
	EDGENF_PFCP_BENCH_OUT=bench/results/upf-pfcp.md \
	  $(GO) test -run XXX -bench PFCPEstablishment -benchtime 1x ./internal/pfcp/agent
	$(GO) run ./bench/cmd/bench -o docs/performance.md

bench-quick: build
	$(GO) run ./bench/cmd/bench -quick -o bench/results/quick.md

clean:
	rm -rf bin

demo-clean: build
	@./bin/edgenf-demo down
