// Package p4 compiles P4-16 programs (v1model) to eBPF cubes for edgenf.
//
// The preprocessor is the real C preprocessor (clang -E, confined: package
// cpp); the parser and type checker are Go; clang compiles the generated C.
// Typical use:
//
//	opt, err := p4.FromFile("prog.p4") // or Options{Path: name, Source: text}
//	res, err := p4.Compile(ctx, opt)
//	// res.Object / res.ObjectTC: ELF objects for the XDP and TC hooks
//	// res.Info: the P4Info model with edgenf's map layouts
//	// res.C: the generated C
//
// Table entries are encoded from strings with res.Info.Edgenf.Table(name).EncodeEntry
// and written with the rt package.
package p4

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/edgenf/edgenf/bpf"
	"github.com/edgenf/edgenf/internal/p4/backend"
	"github.com/edgenf/edgenf/internal/p4/cpp"
	"github.com/edgenf/edgenf/internal/p4/include"
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Options configures Compile.
type Options struct {
	// Source is the program's text; Path names it in diagnostics and is
	// never opened (FromFile reads a local file for trusted callers).
	Path   string
	Source []byte
	// IncludeDirs are trusted directories #include searches, after the
	// built-in core.p4, v1model.p4 and psa.p4: an administrator's (the daemon), the
	// user's own (the CLI); never a client's. The preprocessor reads them
	// as the user nobody.
	IncludeDirs []string
	// Defines are -D NAME[=value] macros ("" means 1).
	Defines map[string]string
	// Arch is the architecture the caller expects: "", "v1model" or "psa".
	// The program's main package decides (V1Switch or PSA_Switch); a
	// program of another architecture than a non-empty Arch is an error.
	Arch string
	// Clang is the compiler to run; "" means bpf.Clang() ($EDGENF_CLANG,
	// else clang or clang-NN on PATH).
	Clang string
	// NoObject stops after generating C (no clang run).
	NoObject bool
	// CPUPort is the egress_spec of the CPU port (packet-in), besides 510;
	// 0 means 255. Packet-out frames arrive with this ingress_port.
	CPUPort int
	// Debug checks assert/assume at run time: a false condition counts in
	// the p4_assert_fail map, logs to the trace pipe and drops the packet.
	// Without it they are compiled out.
	Debug bool
}

// Result is a compiled program.
type Result struct {
	Object   []byte         // ELF object for the XDP hook (program "edgenf_cube")
	ObjectTC []byte         // ELF object for the TC hook
	C        string         // generated C
	Info     *p4info.P4Info // P4Info model; Info.Edgenf holds map layouts
	Program  *ir.Program    // lowered program (for tools and tests)

	lines   map[int]syntax.Pos
	sources *syntax.Sources
}

// Warnings are the front end's warnings (file:line:col: warning: ...): the
// program compiled, as with p4c, but something in it may not mean what
// its author meant.
func (r *Result) Warnings() syntax.ErrorList {
	if r.Program == nil || r.Program.Info == nil {
		return nil
	}
	r.Program.Info.Warnings.Sort()
	return r.Program.Info.Warnings
}

// FromFile is Options for a local file its caller trusts (the CLI, tests):
// the file's text, and its directory as the first include directory, where
// #include "x" finds the files beside it. A daemon compiling for its clients
// has their text, not a path, and never calls it.
func FromFile(path string) (Options, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return Options{}, err
	}
	return Options{Path: path, Source: src, IncludeDirs: []string{filepath.Dir(path)}}, nil
}

// Check runs the front end only (preprocess, parse, type-check, lower).
func Check(opt Options) (*ir.Program, *syntax.Sources, error) {
	return check(context.Background(), opt)
}

func check(ctx context.Context, opt Options) (*ir.Program, *syntax.Sources, error) {
	if opt.Arch != "" && opt.Arch != "v1model" && opt.Arch != "psa" {
		return nil, nil, fmt.Errorf("architecture %q is not supported (v1model, psa)", opt.Arch)
	}
	srcs := syntax.NewSources()
	pp, err := cpp.Run(ctx, cpp.Options{Path: opt.Path, Source: opt.Source, IncludeDirs: opt.IncludeDirs,
		Defines: opt.Defines, System: include.FS, Sources: srcs, Clang: opt.Clang})
	if err != nil {
		return nil, srcs, err
	}
	prog, err := syntax.ParsePreprocessed(pp, srcs)
	if err != nil {
		return nil, srcs, err
	}
	info, err := sema.Check(prog, srcs, sema.Options{Arch: opt.Arch})
	if err != nil {
		return nil, srcs, err
	}
	p, err := ir.Build(info, srcs)
	if err != nil {
		return nil, srcs, err
	}
	return p, srcs, nil
}

// Compile compiles a P4 program. Errors from the P4 front end are
// syntax.ErrorList values (file:line:col with the source line and a caret).
func Compile(ctx context.Context, opt Options) (*Result, error) {
	p, srcs, err := check(ctx, opt)
	if err != nil {
		return nil, err
	}
	bopt := backend.Options{CPUPort: opt.CPUPort, Debug: opt.Debug}
	out, err := backend.Generate(p, srcs, bopt)
	if err != nil {
		return nil, err
	}
	c := out.C
	res := &Result{C: c, Info: p4info.FromIR(p), Program: p, lines: out.Lines, sources: srcs}
	res.Info.Edgenf.CPUPort = bopt.CPUPortOf()
	if opt.NoObject {
		return res, nil
	}
	// the two hooks compile in parallel
	var wg sync.WaitGroup
	var errTC error
	wg.Add(1)
	go func() {
		defer wg.Done()
		res.ObjectTC, errTC = CompileC(ctx, opt.Clang, c, "tc")
	}()
	res.Object, err = CompileC(ctx, opt.Clang, c, "xdp")
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if errTC != nil {
		return nil, errTC
	}
	return res, nil
}

// writeHeaders puts the framework headers (bpf.Headers) under dir, the
// private directory of one compilation: a directory shared between runs
// could be prepared by another user, and the daemon would compile their
// headers into the kernel.
func writeHeaders(dir string) error {
	return fs.WalkDir(bpf.Headers, "include", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(bpf.Headers, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
}

// prepareC writes c (as prog.c) and the framework headers into dir and
// returns clang's arguments for compiling it for hook, the same flags as the
// built-in NFs' objects (bpf.CFlags).
func prepareC(dir, clang, c, hook string) ([]string, error) {
	if err := writeHeaders(dir); err != nil {
		return nil, fmt.Errorf("extracting framework headers: %w", err)
	}
	src := filepath.Join(dir, "prog.c")
	if err := os.WriteFile(src, []byte(c), 0o600); err != nil {
		return nil, err
	}
	// The object is the same for the same C whatever the temporary
	// directory and the daemon's working directory: its digest decides
	// whether a restarted daemon adopts a pinned P4 cube (engine/upgrade.go).
	return append(bpf.CFlags(clang, hook), "-Wno-unused-command-line-argument", "-ffile-prefix-map="+dir+"=.", "-fdebug-compilation-dir=.",
		"-I"+filepath.Join(dir, "include"), src), nil
}

// CompileC compiles generated C for hook "xdp" or "tc" and returns the object.
func CompileC(ctx context.Context, clang, c, hook string) ([]byte, error) {
	if clang == "" {
		clang = bpf.Clang()
	}
	dir, err := os.MkdirTemp("", "edgenf-p4-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	args, err := prepareC(dir, clang, c, hook)
	if err != nil {
		return nil, err
	}
	obj := filepath.Join(dir, "prog.o")
	cmd := exec.CommandContext(ctx, clang, append(args, "-c", "-o", obj)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("clang failed on the generated C (%s hook); this is a compiler bug, please report it with --emit-c:\n%s", hook, stderr.String())
		}
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("P4 programs are compiled with clang, and %s was not found: apt-get install clang (or set EDGENF_CLANG)", clang)
		}
		return nil, fmt.Errorf("running %s: %w", clang, err)
	}
	return os.ReadFile(obj)
}
