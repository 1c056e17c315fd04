# edgenf — see README.md. Every target installs what it needs first.
GO         ?= go
# CLANG names the compiler for the eBPF objects; unset, the first of clang,
# clang-14, clang-15, ... on PATH (bpf.Clang).
CLANG      ?=
# -timeout bounds each test binary: test/e2e takes about 7 minutes on a
# quiet machine and went past 28 under a load of 20-30 (schemathesis alone
# 13 minutes), so the bound is well above that and well under CI's 90.
TEST_FLAGS ?= -count=1 -p 2 -timeout 55m
# `make install` places (override on the command line); `make deb` uses /usr.
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
# edgenf-cni goes where runtimes look for CNI plugins: Debian's directory
# (beside containernetworking-plugins) for /usr, else the CNI default
CNIDIR     ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/cni,/opt/cni/bin)
# the distribution's unit directory (/lib/systemd/system on Debian 12,
# /usr/lib/systemd/system on 13), asked when used (setup installs systemd)
SYSTEM_UNITDIR = $(shell systemd-path systemd-system-unit 2>/dev/null || echo /lib/systemd/system)
UNITDIR    ?= $(if $(filter /usr,$(PREFIX)),$(SYSTEM_UNITDIR),$(PREFIX)/lib/systemd/system)
# what install copies the binaries from
BIN        ?= bin
COMMIT_DATE = $(shell git log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null || echo 0)
VERSION    ?= 0.1.0+git$(COMMIT_DATE).$(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

.PHONY: all setup bpf build web check-host gen install uninstall deb check-package test soak demo demo-chain demo-clean bench bench-quick p4-conformance clean

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
	$(GO) build -trimpath -o bin/ ./cmd/...

# Man pages (cobra's for edgenf, edgenfd's from its flags) and completions.
gen: build
	rm -rf build/gen
	$(BIN)/edgenf gen-docs build/gen
	$(BIN)/edgenfd -man > build/gen/man/edgenfd.8

install: gen
	install -D -m 755 $(BIN)/edgenfd $(DESTDIR)$(SBINDIR)/edgenfd
	install -D -m 755 $(BIN)/edgenf $(DESTDIR)$(BINDIR)/edgenf
	install -D -m 755 $(BIN)/edgenf-cni $(DESTDIR)$(CNIDIR)/edgenf-cni
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8
	for f in build/gen/man/*.1; do gzip -9n < $$f > $(DESTDIR)$(MANDIR)/man1/$${f##*/}.gz; done
	gzip -9n < build/gen/man/edgenfd.8 > $(DESTDIR)$(MANDIR)/man8/edgenfd.8.gz
	install -D -m 644 build/gen/completions/edgenf.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/edgenf
	install -D -m 644 build/gen/completions/_edgenf $(DESTDIR)$(DATADIR)/zsh/vendor-completions/_edgenf
	install -D -m 644 build/gen/completions/edgenf.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/edgenf.fish
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|@SBINDIR@|$(SBINDIR)|' deploy/systemd/edgenfd.service > $(DESTDIR)$(UNITDIR)/edgenfd.service
	chmod 644 $(DESTDIR)$(UNITDIR)/edgenfd.service
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; \
	  echo "installed: start edgenfd with 'systemctl enable --now edgenfd'"; fi

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

# Leaves the state (/var/lib/edgenf) and the running datapath: remove those
# first with 'edgenfd -destroy' if wanted.
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl disable --now edgenfd 2>/dev/null || true; fi
	rm -f $(DESTDIR)$(SBINDIR)/edgenfd $(DESTDIR)$(BINDIR)/edgenf $(DESTDIR)$(CNIDIR)/edgenf-cni \
	  $(DESTDIR)$(MANDIR)/man1/edgenf.1.gz $(DESTDIR)$(MANDIR)/man1/edgenf-*.1.gz $(DESTDIR)$(MANDIR)/man8/edgenfd.8.gz \
	  $(DESTDIR)$(DATADIR)/bash-completion/completions/edgenf $(DESTDIR)$(DATADIR)/zsh/vendor-completions/_edgenf \
	  $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/edgenf.fish $(DESTDIR)$(UNITDIR)/edgenfd.service
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

# A Debian package (build/edgenf_VERSION_ARCH.deb) that
# 'apt install ./build/edgenf_*.deb' installs: static, stripped binaries.
deb: setup
	rm -rf build/deb build/edgenf_*.deb
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o build/deb/bin/ ./cmd/edgenf ./cmd/edgenfd ./cmd/edgenf-cni
	$(MAKE) --no-print-directory install BIN=build/deb/bin PREFIX=/usr DESTDIR=$(CURDIR)/build/deb/root
	./scripts/mkdeb.sh build/deb/root "$(VERSION)" build

# The package passes lintian and its unit systemd-analyze verify (whose
# check of ExecStart and of the man pages the unit names runs on the
# package's files).
check-package: deb
	lintian --fail-on error,warning build/edgenf_*.deb
	sed 's|^ExecStart=/usr/sbin|ExecStart=$(CURDIR)/build/deb/root/usr/sbin|' \
	  build/deb/root$(SYSTEM_UNITDIR)/edgenfd.service > build/deb/edgenfd.service
	MANPATH=$(CURDIR)/build/deb/root/usr/share/man systemd-analyze verify build/deb/edgenfd.service

# edgenfd -check: one line per problem of this machine, with its fix.
check-host: build
	@out=$$(./bin/edgenfd -check 2>&1) || { echo "$$out"; echo "make: this machine cannot run edgenf's tests and demo: see the FAIL lines"; exit 1; }

# test/e2e is named first so that it starts first: the longest package,
# mostly waiting on daemons and traffic, runs beside all the others
# instead of alone at the end.
test: build check-host
	@unformatted=$$(gofmt -l cmd internal bench test); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test $(TEST_FLAGS) ./test/e2e ./...
	$(MAKE) --no-print-directory check-package

# Randomized API churn by several tenants with traffic on every chain, for
# SOAK (minutes to hours); not part of test.
SOAK ?= 10m
soak: build
	EDGENF_SOAK=$(SOAK) $(GO) test -count=1 -v -run '^TestSoak$$' -timeout 0 ./test/e2e/

demo: build check-host
	@./bin/edgenf-demo up

demo-chain: build check-host
	@./bin/edgenf-demo chain

bench: build
	$(GO) run ./bench/cmd/accuracy -o bench/results/estimate-accuracy.md
	EDGENF_PFCP_BENCH_OUT=$(CURDIR)/bench/results/upf-pfcp.md \
	  $(GO) test -run XXX -bench PFCPEstablishment -benchtime 1x ./internal/pfcp/agent
	EDGENF_UPF_MEMORY_OUT=$(CURDIR)/bench/results/upf-memory.md \
	  $(GO) test -run XXX -bench UPFMemory -benchtime 1x ./internal/pfcp/agent
	$(GO) run ./bench/cmd/isolation -o bench/results/slice-isolation.md -img docs/img
	EDGENF_SLICE_BENCH_OUT=$(CURDIR)/bench/results/slice-create.md \
	  $(GO) test -run XXX -bench SliceCreate -benchtime 1x ./internal/nf/slicer
	EDGENF_ENGINE_BENCH_OUT=$(CURDIR)/bench/results/engine-change.md \
	  $(GO) test -run XXX -bench '^BenchmarkChange$$' -benchtime 100x ./internal/engine
	EDGENF_ADMIT_BENCH_OUT=$(CURDIR)/bench/results/admission.md \
	  $(GO) test -run XXX -bench '^BenchmarkAdmission$$' -benchtime 20x ./internal/estimate
	EDGENF_PEER_BENCH_OUT=$(CURDIR)/bench/results/peering.md \
	  $(GO) test -run XXX -bench '^BenchmarkPeering$$' -benchtime 1x ./internal/engine
	$(GO) run ./bench/cmd/bench -o docs/performance.md

bench-quick: build
	$(GO) run ./bench/cmd/bench -quick -o bench/results/quick.md

# p4c's own samples through edgenf's compiler and STF runner (not part of
# test: it needs a p4c checkout, P4C_DIR=/path/to/p4c). Prints a table and
# rewrites the generated conformance section of docs/p4-guide.md.
p4-conformance: build
	@test -n "$(P4C_DIR)" || { echo "make p4-conformance: set P4C_DIR to a p4c checkout (make p4-conformance P4C_DIR=/path/to/p4c)"; exit 2; }
	$(GO) run ./internal/p4/conformance/cmd/p4conformance -p4c "$(P4C_DIR)" -edgenf bin/edgenf -doc docs/p4-guide.md

clean:
	rm -rf bin build

demo-clean: build
	@./bin/edgenf-demo down
