package p4

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

var cLineRef = regexp.MustCompile(`@ prog\.c:(\d+)`)

// ExplainLoadError turns a kernel verifier rejection of the compiled program
// into an error pointing at the P4 statement the rejected code came from,
// when it can; otherwise it returns err unchanged.
func (r *Result) ExplainLoadError(err error) error {
	var ve *ebpf.VerifierError
	if err == nil || !errors.As(err, &ve) || len(r.lines) == 0 {
		return err
	}
	last := ""
	cline := 0
	for _, l := range ve.Log {
		if m := cLineRef.FindStringSubmatch(l); m != nil {
			cline, _ = strconv.Atoi(m[1])
		}
		if t := strings.TrimSpace(l); t != "" {
			last = t
		}
	}
	if cline == 0 {
		return err
	}
	// the nearest generated line at or before cline that came from P4
	for l := cline; l > 0 && l > cline-200; l-- {
		if p, ok := r.lines[l]; ok {
			e := r.sources.Errorf(p, "the kernel verifier rejected the code generated for this (generated C line %d): %s", cline, last)
			return fmt.Errorf("%w\n(%v)", e, err)
		}
	}
	return err
}

// SourcePos returns the P4 position generated C line n came from.
func (r *Result) SourcePos(n int) (syntax.Pos, bool) {
	p, ok := r.lines[n]
	return p, ok
}

// WriteFiles writes the outputs of `edgenf p4 compile` into dir:
// <base>_xdp.o, <base>_tc.o, <base>.p4info.json (P4Info),
// <base>.model.json (P4Info plus edgenf's map layouts) and, with emitC,
// <base>.c. It returns the paths written.
func (r *Result) WriteFiles(dir, base string, emitC bool) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p4info, err := r.Info.MarshalP4Info()
	if err != nil {
		return nil, err
	}
	model, err := r.MarshalModel()
	if err != nil {
		return nil, err
	}
	files := []struct {
		name string
		data []byte
	}{
		{base + "_xdp.o", r.Object},
		{base + "_tc.o", r.ObjectTC},
		{base + ".p4info.json", p4info},
		{base + ".model.json", model},
	}
	if emitC {
		files = append(files, struct {
			name string
			data []byte
		}{base + ".c", []byte(r.C)})
	}
	var out []string
	for _, f := range files {
		if f.data == nil {
			continue
		}
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// MarshalModel returns the model JSON (P4Info plus edgenf's layouts).
func (r *Result) MarshalModel() ([]byte, error) { return r.Info.Marshal() }
