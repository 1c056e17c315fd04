package backend

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Options are target settings of the generated code.
type Options struct {
	// CPUPort is the egress_spec that sends a packet to the slow path
	// (packet-in), besides 510; 0 means DefaultCPUPort.
	CPUPort int
	// Debug checks assert and assume at run time (externs.go).
	Debug bool
}

// DefaultCPUPort is the CPU port of a cube unless configured (BMv2's usual
// --cpu-port, the P4 tutorials' CPU_PORT).
const DefaultCPUPort = ir.DefaultCPUPort

// CPUPortOf returns the CPU port the options select.
func (o Options) CPUPortOf() int {
	if o.CPUPort == 0 {
		return DefaultCPUPort
	}
	return o.CPUPort
}

// spHdr is sizeof(struct edgenf_punt_hdr).
const spHdr = 32

// slowPathSetup collects digests and log messages and makes room for their
// message in the state (the runtime is bpf/include/edgenf/p4/digest.h).
func (g *gen) slowPathSetup() {
	g.sp = ir.BuildSlowPath(g.p, g.src)
	for _, e := range g.sp.Errs {
		if len(g.errs) < 50 {
			g.errs = append(g.errs, e)
		}
	}
	if len(g.sp.Digests) == 0 && len(g.sp.Logs) == 0 {
		return
	}
	maxBytes := 8
	for _, d := range g.sp.Digests {
		maxBytes = max(maxBytes, d.Bytes)
	}
	for _, m := range g.sp.Logs {
		maxBytes = max(maxBytes, m.Bytes)
	}
	// the message: a punt header, then the data (digest.h)
	g.bufs = append(g.bufs, fmt.Sprintf("__u8 spbuf[%d] __attribute__((aligned(8)))", spHdr+(maxBytes+7)&^7))
}

// spValue is one scalar of a message's data: a C value, or for wide fields
// a pointer to its big-endian bytes.
type spValue struct {
	c    string
	wide bool
}

// dataValues returns the C values of a data expression, in the order
// ir.BuildSlowPath lays its fields out.
func (g *gen) dataValues(e syntax.Expr) []spValue {
	var out []spValue
	var walkLval func(c string, st *sema.Struct)
	walkLval = func(c string, st *sema.Struct) {
		for _, f := range st.Fields {
			fc := c + ".f_" + f.Name
			if sub, ok := f.Type.(*sema.Struct); ok {
				walkLval(fc, sub)
				continue
			}
			out = append(out, spValue{c: fc, wide: isWide(f.Type)})
		}
	}
	scalar := func(e syntax.Expr, t sema.Type) {
		if st, ok := t.(*sema.Struct); ok {
			walkLval(g.lval(e), st)
			return
		}
		if isWide(t) {
			out = append(out, spValue{c: g.wref(e), wide: true})
			return
		}
		out = append(out, spValue{c: g.rv(e)})
	}
	t := g.typeOf(e)
	if l, ok := e.(*syntax.List); ok {
		st, _ := t.(*sema.Struct)
		for i, el := range l.Elems {
			et := g.typeOf(el)
			if st != nil && i < len(st.Fields) {
				if _, ok := st.Fields[i].Type.(*sema.Struct); !ok {
					et = st.Fields[i].Type
				}
			}
			scalar(el, et)
		}
		return out
	}
	if tt, ok := t.(*sema.Tuple); ok {
		base := g.lval(e)
		for i, el := range tt.Elems {
			c := fmt.Sprintf("%s.f%d", base, i)
			if sub, ok := el.(*sema.Struct); ok {
				walkLval(c, sub)
			} else {
				out = append(out, spValue{c: c, wide: isWide(el)})
			}
		}
		return out
	}
	scalar(e, t)
	return out
}

// packData writes the values of e into s->spbuf after the punt header.
func (g *gen) packData(e syntax.Expr, fields []ir.DataField) bool {
	vals := g.dataValues(e)
	if len(vals) != len(fields) {
		g.errorf(e.NodePos(), "internal: %d values for %d message fields", len(vals), len(fields))
		return false
	}
	for i, f := range fields {
		off := spHdr + f.Offset
		if vals[i].wide {
			g.line("p4_memcpy(s->spbuf + %d, %s, %d);", off, vals[i].c, f.Size)
			continue
		}
		g.line("p4_wbe(s->spbuf + %d, (__u64)(%s) & %s, %d);", off, vals[i].c, mask(f.Width), f.Size)
	}
	return true
}

// digestCall sends digest<T>(receiver, data): the data, as it is now, goes to
// the slow path; the packet goes on.
func (g *gen) digestCall(call *syntax.Call) {
	d := g.sp.DigestOf[call]
	if d == nil {
		return // reported by BuildSlowPath
	}
	g.line("{ /* digest %s */", comment(d.Name))
	g.indent++
	if g.packData(call.Args[len(call.Args)-1].Value, d.Fields) { // v1model digest(receiver, data); PSA pack(data)
		g.line("p4_sp_out(ctx, s->spbuf, P4_PUNT_DIGEST, %d, %d, P4_SP_DIGEST_SENT);", d.Index, d.Bytes)
	}
	g.indent--
	g.line("}")
}

// logCall sends log_msg(format[, data]) to the daemon's log (rate-limited).
func (g *gen) logCall(call *syntax.Call) {
	m := g.sp.LogOf[call]
	if m == nil {
		return
	}
	g.line("if (p4_log_ok()) { /* log_msg %s */", comment(m.Format))
	g.indent++
	ok := true
	if len(m.Fields) > 0 {
		ok = g.packData(call.Args[1].Value, m.Fields)
	}
	if ok {
		g.line("p4_sp_out(ctx, s->spbuf, P4_PUNT_LOG, %d, %d, P4_SP_LOG_SENT);", m.Index, m.Bytes)
	}
	g.indent--
	g.line("}")
}
