package p4

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
)

func exampleFiles(t *testing.T) []string {
	files, _ := filepath.Glob("../../examples/p4/*.p4")
	if len(files) < 5 {
		t.Fatalf("examples missing: %v", files)
	}
	return files
}

// TestCompileExamples compiles every example to XDP and TC objects.
func TestCompileExamples(t *testing.T) {
	for _, f := range exampleFiles(t) {
		f := f
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			opt := mustFile(t, f)
			res, err := Compile(context.Background(), opt)
			if err != nil {
				if res == nil {
					opt.NoObject = true
					if c, err2 := Compile(context.Background(), opt); err2 == nil {
						out := filepath.Join(os.TempDir(), strings.TrimSuffix(filepath.Base(f), ".p4")+".c")
						os.WriteFile(out, []byte(c.C), 0o644)
						t.Logf("generated C in %s", out)
					}
				}
				t.Fatal(err)
			}
			if len(res.Object) == 0 || len(res.ObjectTC) == 0 {
				t.Fatal("empty object")
			}
			// the kernel requirements of what it uses are known (docs/kernel.md)
			for _, obj := range [][]byte{res.Object, res.ObjectTC} {
				spec, err := datapath.LoadSpec(obj)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := datapath.Requirements(spec); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func mustFile(t *testing.T, path string) Options {
	t.Helper()
	opt, err := FromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}
