package stf

import (
	"context"
	"fmt"
	"os"

	"github.com/edgenf/edgenf/internal/p4"
)

// LoadResult loads a compiled program's object for hook "xdp" or "tc";
// verifier rejections are explained in terms of the P4 source.
func LoadResult(res *p4.Result, hook string) (*Runner, error) {
	obj := res.Object
	if hook == "tc" {
		obj = res.ObjectTC
	}
	if obj == nil {
		return nil, fmt.Errorf("no %s object (compiled with NoObject?)", hook)
	}
	r, err := LoadHook(obj, res.Info, hook)
	if err != nil {
		return nil, res.ExplainLoadError(err)
	}
	return r, nil
}

// RunFile compiles a P4 program and runs an STF file against it: what
// `edgenf p4 test prog.p4 prog.stf` does. hook is "xdp" (default) or "tc".
// A nil error with a failing Result means the program ran but checks failed.
func RunFile(ctx context.Context, opt p4.Options, stfPath, hook string) (*Result, error) {
	return RunFileMode(ctx, opt, stfPath, hook, false)
}

// RunFileMode is RunFile; with live, packets go through real veths (LoadLive)
// instead of BPF_PROG_TEST_RUN.
func RunFileMode(ctx context.Context, opt p4.Options, stfPath, hook string, live bool) (*Result, error) {
	if hook == "" {
		hook = "xdp"
	}
	text, err := os.ReadFile(stfPath)
	if err != nil {
		return nil, err
	}
	cmds, err := Parse(stfPath, string(text))
	if err != nil {
		return nil, err
	}
	res, err := p4.Compile(ctx, opt)
	if err != nil {
		return nil, err
	}
	var r *Runner
	if live {
		r, err = LoadLive(res, hook, portsUsed(cmds))
	} else {
		r, err = LoadResult(res, hook)
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out, err := r.Run(stfPath, cmds)
	if out != nil {
		for _, w := range res.Warnings() {
			out.Warnings = append(out.Warnings, w.Error())
		}
	}
	return out, err
}

// portsUsed lists the ports a test sends to or expects on (CPU port aside).
func portsUsed(cmds []*Cmd) []int {
	seen := map[int]bool{}
	var out []int
	for _, c := range cmds {
		if (c.Kind == "packet" || c.Kind == "expect") && c.Port != CPUPort && !seen[c.Port] {
			seen[c.Port] = true
			out = append(out, c.Port)
		}
	}
	return out
}
