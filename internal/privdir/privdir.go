// Package privdir makes sure the directories the daemon keeps its state,
// pins and sockets in are its own: another local user who can write to
// such a directory, or to one above it that is not sticky, could swap the
// state file the daemon trusts at its next start, rename pinned maps from
// one cube to another, or point the journal at a file of the host.
package privdir

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Ensure creates dir (mode 0700) if it does not exist, and checks that it
// and every directory above it are safe (Check).
func Ensure(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return Check(dir)
}

// Check refuses a directory that is not the daemon's alone: it must be
// owned by the daemon's user (or root) and writable by no one else, and
// each directory above it must be owned by root or that user and, if
// others may write to it, sticky (as /tmp is: no one renames what is not
// theirs). Symbolic links on the way are followed first.
func Check(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	euid := uint32(os.Geteuid())
	for p, first := real, true; ; p, first = filepath.Dir(p), false {
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok || !st.IsDir() {
			return fmt.Errorf("%s is not a directory", p)
		}
		if sys.Uid != 0 && sys.Uid != euid {
			return fmt.Errorf("directory %s is owned by uid %d, not by the daemon's user: another user could change what the daemon keeps in %s (use a directory of the daemon's own)", p, sys.Uid, dir)
		}
		perm := st.Mode()
		if perm.Perm()&0o022 != 0 && (first || perm&os.ModeSticky == 0) {
			return fmt.Errorf("directory %s is writable by others (mode %v): another user could change what the daemon keeps in %s (chmod go-w it, or use a directory of the daemon's own)", p, perm, dir)
		}
		if p == "/" || p == filepath.Dir(p) {
			return nil
		}
	}
}

// CheckFile refuses a file in a safe directory that another user could
// change, or that is a symbolic link (the daemon would write where it
// points); a missing file is fine.
func CheckFile(path string) error {
	st, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link: the daemon reads and writes its own files only", path)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && sys.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("%s is owned by uid %d, not by the daemon's user", path, sys.Uid)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by others (mode %v): chmod go-w it", path, st.Mode().Perm())
	}
	return nil
}
