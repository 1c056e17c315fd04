# edgenf — see README.md. Every target installs what it needs first.
CLANG      ?= clang-14
GO         ?= go
BPF_CFLAGS := -O2 -g -Wall -Werror -target bpf -mcpu=v3 \
              -Ibpf/include -I/usr/include/x86_64-linux-gnu
# Every *.bpf.c under internal/ is built twice, for the XDP and the TC hook,
# into objects beside it that the Go package embeds.
BPF_SRC    := $(shell find internal bench -name '*.bpf.c' 2>/dev/null)
BPF_OBJ    := $(foreach s,$(BPF_SRC),$(s:.bpf.c=_xdp.o) $(s:.bpf.c=_tc.o))
BPF_HDR    := $(shell find bpf/include -name '*.h')
TEST_FLAGS ?= -count=1 -p 2 -timeout 28m

.PHONY: all setup bpf build web test soak demo demo-chain demo-clean bench bench-quick clean

all: build

setup:
	@./scripts/setup.sh

bpf: $(BPF_OBJ)

%_xdp.o: %.bpf.c $(BPF_HDR)
	$(CLANG) $(BPF_CFLAGS) -DEDGENF_HOOK_XDP -c $< -o $@

%_tc.o: %.bpf.c $(BPF_HDR)
	$(CLANG) $(BPF_CFLAGS) -DEDGENF_HOOK_TC -c $< -o $@

build: setup bpf
	$(GO) build -o bin/ ./cmd/...

# The dashboard (web/) is hand-written ES modules and CSS, embedded as they
# are; its one dependency, htm's Preact bundle, is committed under
# web/static/vendor. This refetches it from npm at the version
# package-lock.json pins and checks it against web/vendor.sum.
web:
	@command -v npm >/dev/null || { echo "make web: installing npm"; \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq npm >/dev/null; }
	cd web && npm ci --ignore-scripts --no-audit --no-fund
	mkdir -p web/static/vendor/htm
	cp web/node_modules/htm/preact/standalone.module.js web/node_modules/htm/LICENSE web/static/vendor/htm/
	cd web && sha256sum -c vendor.sum

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
	$(GO) run ./bench/cmd/accuracy -o bench/results/estimate-accuracy.md
	EDGENF_PFCP_BENCH_OUT=bench/results/upf-pfcp.md \
	  $(GO) test -run XXX -bench PFCPEstablishment -benchtime 1x ./internal/pfcp/agent
	$(GO) run ./bench/cmd/bench -o docs/performance.md

bench-quick: build
	$(GO) run ./bench/cmd/bench -quick -o bench/results/quick.md

clean:
	rm -rf bin $(BPF_OBJ)

demo-clean: build
	@./bin/edgenf-demo down
