package p4

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/edgenf/edgenf/bpf"
)

// forEachGeneratedC compiles each P4 file to C (no object) and calls fn
// with clang's arguments for compiling that C in dir, for both hooks.
func forEachGeneratedC(t *testing.T, files []string, fn func(t *testing.T, f, clang, dir, hook string, args []string)) {
	clang := bpf.Clang()
	if _, err := exec.LookPath(clang); err != nil {
		t.Skipf("no clang on PATH (scripts/setup.sh installs it): %v", err)
	}
	for _, f := range files {
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
				fn(t, f, clang, dir, hook, args)
			}
		})
	}
}

// TestGeneratedCNeedsNoCLibrary lists what the C generated for every
// example includes (clang -M), for both hooks: only the kernel's UAPI
// headers, libbpf's and the framework's, as for the built-in NFs (see
// bpf.TestSourcesNeedNoCLibrary).
func TestGeneratedCNeedsNoCLibrary(t *testing.T) {
	forEachGeneratedC(t, exampleFiles(t), func(t *testing.T, f, clang, dir, hook string, args []string) {
		foreign, err := bpf.ForeignHeaders(clang, dir, args, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(foreign) > 0 {
			t.Errorf("the C for %s (%s hook) includes %s (and %d more files) from outside the kernel UAPI, libbpf and edgenf headers", f, hook, foreign[0], len(foreign)-1)
		}
	})
}

// TestGeneratedCHasNoWarnings compiles the C generated for every example
// and test program with -Werror, for both hooks (clang's front end only):
// the generator switches no warning off, so it must provoke none.
func TestGeneratedCHasNoWarnings(t *testing.T) {
	testdata, _ := filepath.Glob("testdata/*.p4")
	forEachGeneratedC(t, append(exampleFiles(t), testdata...), func(t *testing.T, f, clang, dir, hook string, args []string) {
		out, err := exec.CommandContext(t.Context(), clang, append(args, "-Werror", "-fsyntax-only")...).CombinedOutput()
		if err != nil {
			t.Errorf("%s (%s hook): %v\n%s", f, hook, err, out)
		}
	})
}
