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

// slowPathSetup collects digests and log messages and emits what they need:
// the message buffer, the counters, the in-kernel log rate limit.
func (g *gen) slowPathSetup() {
	g.sp = ir.BuildSlowPath(g.p, g.src)
	for _, e := range g.sp.Errs {
		if len(g.errs) < 50 {
			g.errs = append(g.errs, e)
		}
	}
	w := &g.maps
	fmt.Fprintf(w, "/* the CPU port of this build (510 punts too) */\n#define P4_CPU_PORT_CFG %d\n\n", g.opt.CPUPortOf())
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
	g.bufs = append(g.bufs, fmt.Sprintf("__u8 spbuf[%d] __attribute__((aligned(8)))", spHdr+(maxBytes+7)&^7))
	fmt.Fprintf(w, `/* ---- slow path: digests and log_msg (punt ring, packet untouched) ---- */
#define P4_PUNT_DIGEST %d
#define P4_PUNT_LOG %d
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, %d);
	__type(key, __u32);
	__type(value, __u64);
} %s SEC(".maps");

struct p4_log_rl {
	__u64 start;
	__u64 n;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct p4_log_rl);
} p4_log_rl SEC(".maps");

static __always_inline void p4_sp_count(__u32 i)
{
	__u64 *c = bpf_map_lookup_elem(&%s, &i);

	if (c)
		*c += 1;
}

/* Send buf (a punt header, then n bytes of data) to the slow path;
 * count it at ctr (sent) or ctr + 1 (lost). */
static __always_inline void p4_sp_out(ctx_t *ctx, __u8 *buf, __u32 reason, __u32 arg, __u32 n, __u32 ctr)
{
	struct edgenf_md *md = enf_md();
	struct edgenf_punt_hdr *h = (struct edgenf_punt_hdr *)buf;

	if (!md) {
		p4_sp_count(ctr + 1);
		return;
	}
	h->magic = EDGENF_PUNT_MAGIC;
	h->cube = md->cube;
	h->in_port = md->in_port;
	h->reason = reason;
	h->arg = arg;
	h->pkt_len = n;
	h->ifindex = md->ingress_ifindex;
	h->hook = EDGENF_HOOK_ID;
	if (bpf_perf_event_output(ctx, &enf_punt_ring, BPF_F_CURRENT_CPU, buf, sizeof(*h) + n))
		p4_sp_count(ctr + 1);
	else
		p4_sp_count(ctr);
}

/* log_msg: at most %d messages per second per CPU. */
static __always_inline int p4_log_ok(void)
{
	__u32 zero = 0;
	struct p4_log_rl *r = bpf_map_lookup_elem(&p4_log_rl, &zero);
	__u64 now = bpf_ktime_get_ns();

	if (!r)
		return 0;
	if (now - r->start > 1000000000ULL) {
		r->start = now;
		r->n = 0;
	}
	if (r->n >= %d) {
		p4_sp_count(%d);
		return 0;
	}
	r->n++;
	return 1;
}

`, ir.PuntDigest, ir.PuntLog, ir.SPStats, ir.SlowPathStatsMap, ir.SlowPathStatsMap, ir.LogRatePerCPU, ir.LogRatePerCPU, ir.SPLogLost)
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
	if g.packData(call.Args[1].Value, d.Fields) {
		g.line("p4_sp_out(ctx, s->spbuf, P4_PUNT_DIGEST, %d, %d, %d);", d.Index, d.Bytes, ir.SPDigestSent)
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
		g.line("p4_sp_out(ctx, s->spbuf, P4_PUNT_LOG, %d, %d, %d);", m.Index, m.Bytes, ir.SPLogSent)
	}
	g.indent--
	g.line("}")
}
