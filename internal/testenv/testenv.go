// Package testenv says whether a test can run here, and skips it with a
// one-line reason when it cannot: `go test -short ./...` works on a fresh
// clone as any user, and `make test` (as root) runs everything.
package testenv

import (
	"os"
	"testing"
)

// NeedRoot skips t unless it runs as root: loading eBPF programs, creating
// maps, pinning on bpffs and making network namespaces all need it.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (eBPF programs and maps, bpffs, network namespaces): run as root, as `make test` does")
	}
}

// E2E marks t as an end-to-end test (network namespaces, veths, real
// traffic, the real daemon): `go test -short` skips it, so that unit and
// datapath tests run in seconds; otherwise it needs root.
func E2E(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test (namespaces, real traffic): skipped by -short")
	}
	NeedRoot(t)
}
