// Package bpf carries the framework's C headers inside the binary, so that
// code generated at run time (P4 programs) compiles on a machine without the
// source tree, and says how every eBPF object is compiled: the Makefile (the
// built-in NFs' objects) and the P4 compiler use the same flags.
package bpf

import (
	"bytes"
	"context"
	"debug/elf"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Headers holds include/edgenf/*.h; pass its extracted root to clang with -I.
//
//go:embed include
var Headers embed.FS

// cflags are the flags every object is compiled with (the Makefile reads
// the same file). -fdebug-compilation-dir=. keeps the checkout's path out
// of the objects, so two checkouts build identical bytes.
//
//go:embed cflags
var cflags string

// Clangs are the compilers tried, in order, when none is named: the
// unversioned one Debian's clang package installs, then the versions this
// project has been built with.
var Clangs = []string{"clang", "clang-14", "clang-15", "clang-16", "clang-17", "clang-18", "clang-19"}

// Clang returns the compiler to run: $EDGENF_CLANG if set, else the first
// of Clangs on PATH (or "clang", so that the error names it).
func Clang() string {
	if c := os.Getenv("EDGENF_CLANG"); c != "" {
		return c
	}
	for _, c := range Clangs {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return "clang"
}

// CFlags returns the flags for compiling a framework source for hook ("xdp"
// or "tc") with clang: the common ones, the hook's define, and the kernel's
// asm/ headers for this machine (Debian keeps them under the multiarch
// triplet, /usr/include/x86_64-linux-gnu/asm, aarch64-linux-gnu/asm, ...).
func CFlags(clang, hook string) []string {
	f := strings.Fields(cflags)
	if d := asmIncludeDir(clang); d != "" {
		f = append(f, "-I"+d)
	}
	if hook == "tc" {
		return append(f, "-DEDGENF_HOOK_TC")
	}
	return append(f, "-DEDGENF_HOOK_XDP")
}

var multiarch sync.Map // clang → include dir ("" if none)

// asmIncludeDir is /usr/include/<triplet> when that directory holds asm/,
// the triplet being the one clang names (-print-multiarch: Debian's clang
// 14 answers, later ones may not), else the one of clang's target
// architecture among those installed; "" when there is none (distributions
// that put asm/ straight under /usr/include need nothing).
func asmIncludeDir(clang string) string {
	if d, ok := multiarch.Load(clang); ok {
		return d.(string)
	}
	hasAsm := func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "asm"))
		return err == nil
	}
	dir := ""
	if out, err := exec.Command(clang, "-print-multiarch").Output(); err == nil {
		if t := string(bytes.TrimSpace(out)); t != "" && hasAsm(filepath.Join("/usr/include", t)) {
			dir = filepath.Join("/usr/include", t)
		}
	}
	if dir == "" {
		// x86_64-pc-linux-gnu → /usr/include/x86_64-linux-*/asm
		if out, err := exec.Command(clang, "-dumpmachine").Output(); err == nil {
			arch, _, _ := strings.Cut(string(bytes.TrimSpace(out)), "-")
			if m, _ := filepath.Glob(filepath.Join("/usr/include", arch+"-linux-*", "asm")); len(m) > 0 {
				dir = filepath.Dir(m[0])
			}
		}
	}
	multiarch.Store(clang, dir)
	return dir
}

// Object is one eBPF object of the source tree: a *.bpf.c compiled for one
// hook into <name>_<hook>.o beside it, which its Go package embeds. The
// objects are committed (like bpf2go's), so that a clone builds with plain
// go tooling; `make bpf` (go run ./bpf/gen) regenerates them all.
type Object struct {
	Source string // the C source, relative to the tree's root
	Hook   string // "xdp" or "tc"
	Path   string // the object, relative to the tree's root; "" for a check
}

// Objects lists every object of the tree at root: each *.bpf.c under
// internal/ and bench/, for both hooks.
func Objects(root string) ([]Object, error) {
	var objs []Object
	for _, top := range []string{"internal", "bench"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".bpf.c") {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			for _, h := range []string{"xdp", "tc"} {
				objs = append(objs, Object{Source: rel, Hook: h, Path: strings.TrimSuffix(rel, ".bpf.c") + "_" + h + ".o"})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Path < objs[j].Path })
	return objs, nil
}

// P4Runtime is the directory of the P4 runtime's headers, which the C the
// P4 compiler generates includes (internal/p4/backend).
const P4Runtime = "bpf/include/edgenf/p4"

// Checks lists the compilations `make bpf` runs for their errors only,
// for both hooks: every header of the P4 runtime on its own (nothing that
// the generated C defines may be missing from one), and every
// bpf/check/*.c (the programs that instantiate the runtime's templates,
// such as replicate_run.h, which refuses to compile alone).
func Checks(root string) ([]Object, error) {
	hs, err := filepath.Glob(filepath.Join(root, P4Runtime, "*.h"))
	if err != nil {
		return nil, err
	}
	cs, err := filepath.Glob(filepath.Join(root, "bpf/check/*.c"))
	if err != nil {
		return nil, err
	}
	var checks []Object
	for _, p := range append(hs, cs...) {
		if strings.HasSuffix(p, ".h") {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			if bytes.Contains(b, []byte("#ifndef P4_PROGRAM")) {
				continue // a template: bpf/check has its instance
			}
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, err
		}
		for _, h := range []string{"xdp", "tc"} {
			checks = append(checks, Object{Source: rel, Hook: h})
		}
	}
	return checks, nil
}

// Args are clang's arguments for o, relative to the tree's root (clang
// runs there, so no absolute path reaches the object). Warnings are errors
// in the framework's own sources. A header is compiled as the only
// content of an empty source (-include: "#pragma once" stays legal).
func (o Object) Args(clang string) []string {
	args := append(CFlags(clang, o.Hook), "-Werror", "-Ibpf/include")
	if strings.HasSuffix(o.Source, ".h") {
		return append(args, "-include", o.Source, "-x", "c", os.DevNull)
	}
	return append(args, o.Source)
}

// Build compiles o from the tree at root into out (a check: into nothing).
func (o Object) Build(ctx context.Context, clang, root, out string) error {
	if o.Path == "" {
		out = os.DevNull
	}
	cmd := exec.CommandContext(ctx, clang, append(o.Args(clang), "-c", "-o", out)...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("%s not found: install clang (apt-get install clang, or run scripts/setup.sh)", clang)
		}
		return fmt.Errorf("%s (%s hook): %v\n%s", o.Source, o.Hook, err, b)
	}
	return nil
}

// SameCode reports whether two objects carry the same programs, maps, BTF
// and relocations: every section but the DWARF ones, which also record the
// line numbers of the system's headers.
func SameCode(a, b []byte) (bool, error) {
	sa, err := loadedSections(a)
	if err != nil {
		return false, err
	}
	sb, err := loadedSections(b)
	if err != nil {
		return false, err
	}
	if len(sa) != len(sb) {
		return false, nil
	}
	for name, d := range sa {
		if e, ok := sb[name]; !ok || !bytes.Equal(d, e) {
			return false, nil
		}
	}
	return true, nil
}

func loadedSections(obj []byte) (map[string][]byte, error) {
	f, err := elf.NewFile(bytes.NewReader(obj))
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, s := range f.Sections {
		if strings.HasPrefix(s.Name, ".debug") || strings.HasPrefix(s.Name, ".rel.debug") || s.Type == elf.SHT_NOBITS {
			continue
		}
		d, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", s.Name, err)
		}
		out[s.Name] = d
	}
	return out, nil
}

// Producer is the compiler that built obj, as its DWARF names it ("Debian
// clang version 14.0.6"), or "".
func Producer(obj []byte) string {
	f, err := elf.NewFile(bytes.NewReader(obj))
	if err != nil {
		return ""
	}
	s := f.Section(".debug_str")
	if s == nil {
		return ""
	}
	d, _ := s.Data()
	for _, str := range bytes.Split(d, []byte{0}) {
		if bytes.Contains(str, []byte("clang version")) {
			return string(str)
		}
	}
	return ""
}

// ForeignHeaders runs clang -M with args (which compile one source, from
// directory dir) and returns every file it reads from outside the trees an
// eBPF source may use: the project's own (own, the source's directory), and
// under /usr/include the kernel's UAPI (linux/, asm/, asm-generic/) and
// libbpf's bpf/. Anything else (the C library's headers, above all) breaks
// the build on machines without them.
func ForeignHeaders(clang, dir string, args []string, own ...string) ([]string, error) {
	cmd := exec.Command(clang, append(args, "-M", "-MG")...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s -M: %v\n%s", clang, err, stderr.String())
	}
	var ownAbs []string
	for _, o := range own {
		if !filepath.IsAbs(o) {
			o = filepath.Join(dir, o)
		}
		ownAbs = append(ownAbs, filepath.Clean(o)+"/")
	}
	var foreign []string
	fields := strings.Fields(strings.ReplaceAll(string(out), "\\\n", " "))
	for i, f := range fields {
		if i == 0 && strings.HasSuffix(f, ":") { // the rule's target
			continue
		}
		p := f
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		p = filepath.Clean(p)
		if p == os.DevNull { // the empty source a header is checked in (Object.Args)
			continue
		}
		if !allowedHeader(p, ownAbs) {
			foreign = append(foreign, p)
		}
	}
	return foreign, nil
}

var uapiTree = regexp.MustCompile(`^/usr/include/([^/]+-linux-[^/]+/)?(linux|asm|asm-generic|bpf)/`)

func allowedHeader(p string, own []string) bool {
	for _, o := range own {
		if strings.HasPrefix(p, o) {
			return true
		}
	}
	return uapiTree.MatchString(p)
}
