package bpf_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/edgenf/edgenf/bpf"
)

const root = ".."

func clang(t *testing.T) string {
	t.Helper()
	c := bpf.Clang()
	if _, err := exec.LookPath(c); err != nil {
		t.Skipf("no clang on PATH (scripts/setup.sh installs it): %v", err)
	}
	return c
}

func objects(t *testing.T) []bpf.Object {
	t.Helper()
	objs, err := bpf.Objects(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) < 2*9 {
		t.Fatalf("only %d objects found under %s", len(objs), root)
	}
	return objs
}

// TestObjectsAreFresh rebuilds every object into a scratch directory and
// compares it with the committed one the Go packages embed: a source
// changed without `make bpf` fails here, naming the object.
func TestObjectsAreFresh(t *testing.T) {
	cc := clang(t)
	tmp := t.TempDir()
	for _, o := range objects(t) {
		t.Run(o.Path, func(t *testing.T) {
			t.Parallel()
			committed, err := os.ReadFile(filepath.Join(root, o.Path))
			if err != nil {
				t.Fatalf("%v: run `make bpf` and commit the objects", err)
			}
			out := filepath.Join(tmp, filepath.Base(o.Path))
			if err := o.Build(context.Background(), cc, root, out); err != nil {
				t.Fatal(err)
			}
			fresh, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if p, q := bpf.Producer(committed), bpf.Producer(fresh); p != q {
				t.Skipf("committed objects were built by %q, this machine's compiler is %q: not comparable byte for byte", p, q)
			}
			same, err := bpf.SameCode(committed, fresh)
			if err != nil {
				t.Fatal(err)
			}
			if !same {
				t.Errorf("%s is stale (does not match %s): run `make bpf` and commit it", o.Path, o.Source)
			}
		})
	}
}

// checks are the compilations of the P4 runtime's headers (bpf.Checks).
func checks(t *testing.T) []bpf.Object {
	t.Helper()
	cs, err := bpf.Checks(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 2*2 {
		t.Fatalf("only %d checks found under %s", len(cs), root)
	}
	return cs
}

// TestP4RuntimeCompilesStandalone compiles each header of the P4 runtime
// on its own, and each bpf/check program, for both hooks with -Werror, as
// `make bpf` does: a header that leans on something only the generated C
// defines, or that warns, fails here.
func TestP4RuntimeCompilesStandalone(t *testing.T) {
	cc := clang(t)
	for _, o := range checks(t) {
		t.Run(o.Source+"/"+o.Hook, func(t *testing.T) {
			t.Parallel()
			if err := o.Build(t.Context(), cc, root, ""); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestSourcesNeedNoCLibrary lists what every source includes (clang -M) for
// both hooks: only the kernel's UAPI headers, libbpf's and our own.
func TestSourcesNeedNoCLibrary(t *testing.T) {
	cc := clang(t)
	for _, o := range append(objects(t), checks(t)...) {
		t.Run(o.Source+"/"+o.Hook, func(t *testing.T) {
			t.Parallel()
			foreign, err := bpf.ForeignHeaders(cc, root, o.Args(cc), "bpf/include", filepath.Dir(o.Source))
			if err != nil {
				t.Fatal(err)
			}
			if len(foreign) > 0 {
				t.Errorf("%s (%s hook) includes %s (and %d more files) from outside the kernel UAPI, libbpf and edgenf headers", o.Source, o.Hook, foreign[0], len(foreign)-1)
			}
		})
	}
}
