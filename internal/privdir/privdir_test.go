package privdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/testenv"
)

// nobody is a uid that is not the daemon's: what another local user owns.
const nobody = 65534

func TestEnsureCreatesAPrivateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v %v, want a directory of mode 0700", dir, st.Mode(), err)
	}
	// again, as at the next start
	if err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
}

func TestCheckRefusesWhatOthersCanChange(t *testing.T) {
	testenv.NeedRoot(t)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, parent, dir string)
		want  string // "" = accepted
	}{
		{"own", func(t *testing.T, parent, dir string) {}, ""},
		{"owned by another user", func(t *testing.T, parent, dir string) { must(t, os.Chown(dir, nobody, nobody)) }, "owned by uid 65534"},
		{"writable by others", func(t *testing.T, parent, dir string) { must(t, os.Chmod(dir, 0o777)) }, "writable by others"},
		{"writable by its group", func(t *testing.T, parent, dir string) { must(t, os.Chmod(dir, 0o770)) }, "writable by others"},
		// /tmp and /sys/fs/bpf: others may create entries but not rename ours
		{"in a sticky directory all may write to", func(t *testing.T, parent, dir string) { must(t, os.Chmod(parent, os.ModeSticky|0o777)) }, ""},
		{"in a directory all may write to", func(t *testing.T, parent, dir string) { must(t, os.Chmod(parent, 0o777)) }, "writable by others"},
		{"in a directory of another user", func(t *testing.T, parent, dir string) { must(t, os.Chown(parent, nobody, nobody)) }, "owned by uid 65534"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := filepath.Join(t.TempDir(), "p")
			dir := filepath.Join(parent, "d")
			must(t, os.MkdirAll(dir, 0o700))
			must(t, os.Chmod(parent, 0o755))
			tc.setup(t, parent, dir)
			err := Check(dir)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			// followed through a symbolic link too
			link := filepath.Join(t.TempDir(), "link")
			must(t, os.Symlink(dir, link))
			if err := Check(link); err == nil {
				t.Fatalf("%s accepted through a symbolic link", dir)
			}
		})
	}
}

func TestCheckFile(t *testing.T) {
	testenv.NeedRoot(t)
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	must(t, os.WriteFile(path("own"), nil, 0o600))
	must(t, os.WriteFile(path("shared"), nil, 0o600))
	must(t, os.Chmod(path("shared"), 0o666))
	must(t, os.WriteFile(path("theirs"), nil, 0o600))
	must(t, os.Chown(path("theirs"), nobody, nobody))
	must(t, os.Symlink("/etc/passwd", path("link")))
	must(t, os.Mkdir(path("dir"), 0o700))
	for name, want := range map[string]string{
		"own": "", "missing": "",
		"shared": "writable by others", "theirs": "owned by uid 65534",
		"link": "symbolic link", "dir": "not a regular file",
	} {
		err := CheckFile(path(name))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: got %v, want %q", name, err, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
