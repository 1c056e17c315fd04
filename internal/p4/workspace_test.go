package p4

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCompilesUseAPrivateDirectoryEach: the generated C and the framework
// headers clang reads are in a directory made for that one compile (mode
// 700, a fresh name, removed after): a directory another local user
// prepared, under a name they could guess, is never read. A stand-in clang
// records what it was given.
func TestCompilesUseAPrivateDirectoryEach(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// the old, shared name: another user's headers in it must not be read
	planted := filepath.Join(tmp, "edgenf-p4-include", "include", "edgenf")
	if err := os.MkdirAll(planted, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(planted, "edgenf.h"), []byte("#error planted\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "clang.log")
	clang := filepath.Join(t.TempDir(), "clang")
	script := `#!/bin/sh
out=""; inc=""
while [ $# -gt 0 ]; do
	case "$1" in
	-o) out="$2"; shift ;;
	-I*) case "$1" in *"/include") inc="${1#-I}" ;; esac ;;
	esac
	shift
done
[ -n "$out" ] || exit 0
d=$(dirname "$inc")
echo "$d $(stat -c '%a %u' "$d") $(head -c 64 "$inc/edgenf/edgenf.h" | tr -d '\n')" >> "` + log + `"
echo obj > "$out"
`
	if err := os.WriteFile(clang, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := CompileC(context.Background(), clang, "int x;\n", "xdp"); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("clang ran %d times: %q", len(lines), b)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("clang's record: %q", l)
		}
		dir, mode, uid := f[0], f[1], f[2]
		if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), "edgenf-p4-") || dir == filepath.Dir(filepath.Dir(planted)) {
			t.Errorf("compiled in %s, not a directory of its own under %s", dir, tmp)
		}
		if mode != "700" || uid != strconv.Itoa(os.Geteuid()) {
			t.Errorf("%s: mode %s, owner %s: others could change what clang reads", dir, mode, uid)
		}
		if strings.Contains(l, "planted") {
			t.Errorf("clang read the planted header: %q", l)
		}
		if seen[dir] {
			t.Errorf("two compiles shared %s", dir)
		}
		seen[dir] = true
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s left behind after the compile (%v)", dir, err)
		}
	}
}

// TestCompileIsReproducible: the same C gives the same object, whatever
// the temporary directory and the working directory: a restarted daemon
// adopts a pinned P4 cube only if the object it builds is the one pinned
// (internal/engine/upgrade.go), so a path in the debug info would reload
// every P4 cube at every start.
func TestCompileIsReproducible(t *testing.T) {
	c := "#include <edgenf/edgenf.h>\nint x;\nstatic int f(int a) { return a + x; }\nint g(int a) { return f(a); }\n"
	var objs [][]byte
	for i := range 2 {
		t.Chdir(t.TempDir())
		obj, err := CompileC(context.Background(), "", c, "xdp")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && !strings.Contains(string(obj), "prog.c") {
			t.Fatal("the object names no source file: the test would not see a path in it")
		}
		objs = append(objs, obj)
	}
	if string(objs[0]) != string(objs[1]) {
		t.Fatal("two compiles of the same C gave different objects")
	}
}
