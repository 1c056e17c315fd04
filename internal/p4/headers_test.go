package p4

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/edgenf/edgenf/bpf"
)

// TestGeneratedCNeedsNoCLibrary lists what the C generated for every
// example includes (clang -M), for both hooks: only the kernel's UAPI
// headers, libbpf's and the framework's, as for the built-in NFs (see
// bpf.TestSourcesNeedNoCLibrary).
func TestGeneratedCNeedsNoCLibrary(t *testing.T) {
	clang := bpf.Clang()
	if _, err := exec.LookPath(clang); err != nil {
		t.Skipf("no clang on PATH (scripts/setup.sh installs it): %v", err)
	}
	for _, f := range exampleFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			opt := mustFile(t, f)
			opt.NoObject = true
			res, err := Compile(t.Context(), opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, hook := range []string{"xdp", "tc"} {
				dir := t.TempDir()
				args, err := prepareC(dir, clang, res.C, hook)
				if err != nil {
					t.Fatal(err)
				}
				foreign, err := bpf.ForeignHeaders(clang, dir, args, dir)
				if err != nil {
					t.Fatal(err)
				}
				if len(foreign) > 0 {
					t.Errorf("the C for %s (%s hook) includes %s (and %d more files) from outside the kernel UAPI, libbpf and edgenf headers", f, hook, foreign[0], len(foreign)-1)
				}
			}
		})
	}
}
