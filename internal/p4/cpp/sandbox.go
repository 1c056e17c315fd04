package cpp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/edgenf/edgenf/bpf"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// The sandbox: a private workspace holding the program and the include
// directories, and the confined run of clang -E over it (bubblewrap with
// every namespace unshared, read-only mounts, bounded time and output).

// workspace is the private directory the sandbox sees as /w: the program
// (src/), the built-in include files (sys/) and mount points for the
// trusted include directories (inc/N).
type workspace struct {
	dir  string
	dirs []string // absolute include directories, by N ("": left out)
	// unreadable lists include directories the user nobody cannot read:
	// left out of the sandbox, named when an include is not found
	unreadable []string
}

const (
	sandboxRoot = "/w"
	mainFile    = sandboxRoot + "/src/main.p4"
	sysDir      = sandboxRoot + "/sys"
	incDir      = sandboxRoot + "/inc"
)

func newWorkspace(opt Options) (*workspace, error) {
	dir, err := os.MkdirTemp("", "edgenf-cpp-")
	if err != nil {
		return nil, err
	}
	ws := &workspace{dir: dir}
	fail := func(err error) (*workspace, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	for _, d := range []string{"src", "sys", "inc"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return fail(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "main.p4"), opt.Source, 0o600); err != nil {
		return fail(err)
	}
	if opt.System != nil {
		err := fs.WalkDir(opt.System, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == "." {
				return err
			}
			dst := filepath.Join(dir, "sys", filepath.FromSlash(p))
			if d.IsDir() {
				return os.Mkdir(dst, 0o700)
			}
			b, err := fs.ReadFile(opt.System, p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o600)
		})
		if err != nil {
			return fail(fmt.Errorf("built-in include files: %w", err))
		}
	}
	for i, d := range opt.IncludeDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return fail(err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return fail(fmt.Errorf("include directory %s: not a directory", d))
		}
		if os.Geteuid() == 0 && !readableByNobody(abs) {
			ws.unreadable = append(ws.unreadable, d)
			abs = ""
		}
		ws.dirs = append(ws.dirs, abs)
		if err := os.Mkdir(filepath.Join(dir, "inc", strconv.Itoa(i)), 0o700); err != nil {
			return fail(err)
		}
	}
	if os.Geteuid() == 0 {
		// the preprocessor runs as nobody: the workspace is its own
		err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, nobody, nobody)
		})
		if err != nil {
			return fail(err)
		}
	}
	return ws, nil
}

// readableByNobody reports whether a user with no particular rights can
// reach dir and list and read it (it and its ancestors open to others).
func readableByNobody(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return false
		}
		need := fs.FileMode(0o001) // search
		if d == dir {
			need = 0o005 // and list
		}
		if st.Mode().Perm()&need != need {
			if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Uid != nobody || st.Mode().Perm()&(need<<6) != need<<6 {
				return false
			}
		}
		if d == "/" || d == "." {
			return true
		}
	}
}

// sandboxArgs is the bubblewrap command line around argv.
func (ws *workspace) sandboxArgs(argv []string) []string {
	args := []string{"--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
		"--ro-bind", "/usr", "/usr"}
	// the rest of the system the programs under /usr need (merged /usr
	// systems have symlinks here)
	for _, d := range []string{"/bin", "/lib", "/lib64", "/lib32", "/libx32"} {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
		case st.Mode()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case st.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	args = append(args, "--ro-bind", ws.dir, sandboxRoot)
	for i, d := range ws.dirs {
		if d != "" {
			args = append(args, "--ro-bind", d, incDir+"/"+strconv.Itoa(i))
		}
	}
	return append(append(args, "--"), argv...)
}

func clangPath(name string) (string, error) {
	if name == "" {
		name = bpf.Clang() // the clang that compiles the generated C
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("cpp: the C preprocessor (%s): %w", name, err)
	}
	if p, err = filepath.Abs(p); err != nil {
		return "", err
	}
	if !strings.HasPrefix(p, "/usr/") {
		return "", fmt.Errorf("cpp: %s is outside /usr, which is all the preprocessor's sandbox holds", p)
	}
	return p, nil
}

// run runs the preprocessor in its sandbox. It returns the output, or the
// program's diagnostics (stderr), or an error about the run itself.
func (ws *workspace) run(ctx context.Context, opt Options) ([]byte, error, error) {
	clang, err := clangPath(opt.Clang)
	if err != nil {
		return nil, nil, err
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, nil, errors.New("cpp: the P4 preprocessor runs confined by bubblewrap (bwrap), which is not installed: apt-get install bubblewrap (scripts/setup.sh installs it)")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil || !strings.HasPrefix(prlimit, "/usr/") {
		return nil, nil, errors.New("cpp: prlimit (util-linux) is needed under /usr/bin to bound the preprocessor")
	}
	argv := []string{prlimit, fmt.Sprintf("--as=%d", addressSpace), fmt.Sprintf("--cpu=%d", int(opt.Timeout/time.Second)+1), "--",
		clang, "-E", "-x", "c", "-undef", "-nostdinc", "-fno-color-diagnostics", "-ferror-limit=20", "-I", sysDir}
	for i, d := range ws.dirs {
		if d != "" {
			argv = append(argv, "-I", incDir+"/"+strconv.Itoa(i))
		}
	}
	for _, k := range sortedKeys(opt.Defines) {
		v := opt.Defines[k]
		if v == "" {
			v = "1"
		}
		argv = append(argv, "-D"+k+"="+v)
	}
	argv = append(argv, mainFile)

	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap, ws.sandboxArgs(argv)...)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	var stderr limitedBuffer
	stderr.max = maxStderr
	cmd.Stderr = &stderr
	first := syntax.Pos{File: opt.Path, Line: 1, Col: 1}
	stopped := func() error {
		return syntax.ErrorList{opt.Sources.Errorf(first, "preprocessing stopped after %v (an include of something endless, or macros that expand without bound?)", opt.Timeout)}.Err()
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// (the bound ran out before the sandbox started: a loaded
			// machine and a short bound)
			return nil, stopped(), nil
		}
		return nil, nil, fmt.Errorf("cpp: start the sandbox: %w", err)
	}
	out, readErr := io.ReadAll(io.LimitReader(stdout, int64(opt.MaxOutput)+1))
	tooBig := len(out) > opt.MaxOutput
	if tooBig {
		cancel()
	}
	io.Copy(io.Discard, stdout)
	waitErr := cmd.Wait()
	switch {
	case tooBig:
		return nil, syntax.ErrorList{opt.Sources.Errorf(first, "preprocessing stopped: the preprocessed program is larger than %d MiB (an include of something endless, or macros that expand without bound?)", opt.MaxOutput>>20)}.Err(), nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, stopped(), nil
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	case readErr != nil:
		return nil, nil, readErr
	}
	if waitErr == nil {
		return out, nil, nil
	}
	if errs := ws.diagnostics(stderr.Bytes(), opt); len(errs) > 0 {
		return nil, errs.Err(), nil
	}
	// No diagnostic of the program: the sandbox or the preprocessor
	// itself failed. Their own messages say why; they never quote the
	// program's files (diagnostics about those were parsed above).
	var why []string
	bounded := false
	for _, l := range strings.Split(stderr.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "LLVM ERROR"):
			bounded = true // out of memory under RLIMIT_AS
		case strings.HasPrefix(l, "bwrap:") || strings.HasPrefix(l, "prlimit:") || strings.HasPrefix(l, "clang"):
			why = append(why, l)
		}
	}
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) && ee.ExitCode() > 128 || ee != nil && ee.ExitCode() < 0 {
		bounded = true // killed: RLIMIT_CPU, or a crash under RLIMIT_AS
	}
	if bounded && len(why) == 0 {
		return nil, syntax.ErrorList{opt.Sources.Errorf(first, "preprocessing stopped: the preprocessor ran out of its memory or time bounds (macros that expand without bound?)")}.Err(), nil
	}
	if len(why) == 0 {
		why = append(why, waitErr.Error())
	}
	return nil, nil, fmt.Errorf("cpp: the preprocessor did not run: %s", strings.Join(why, "; "))
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
