package ir

import (
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// idleLayout places the time of an entry's last hit (bpf_ktime_get_ns) in
// the values of a table with support_timeout = true.
func idleLayout(src *syntax.Sources, t *sema.Table, it *Table) []*syntax.Error {
	switch it.Kind {
	case KindHash, KindScan, KindLPM:
	default:
		return []*syntax.Error{src.Errorf(t.Decl.Pos, "unsupported: support_timeout on table %s: const entries and keyless tables have no entries of the control plane to time out", t.Name)}
	}
	it.IdleOff = align8(it.ParamOff)
	it.ParamOff = it.IdleOff + 8
	return nil
}
