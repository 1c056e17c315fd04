package backend

import (
	"fmt"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// This file: the v1model extern functions random, truncate, assert and
// assume.

// random generates random<T>(out result, in lo, in hi): a value uniform in
// [lo, hi] from bpf_get_prandom_u32. A range that is a power of two is
// masked; other ranges up to 2^32 use Lemire's multiply-shift with
// rejection (at most 4 draws; the residual bias, after 4 rejected draws,
// is below range/2^32 x 2^-4 for the worst range, and zero in practice for
// small ranges); wider ranges use two draws and a modulo (bias below
// range/2^64). lo > hi gives lo.
func (g *gen) random(call *syntax.Call) {
	out := call.Args[0].Value
	w := width(g.typeOf(out))
	if w <= 0 || w > 64 || isWide(g.typeOf(out)) {
		g.unsupported(out.NodePos(), "random into "+g.typeOf(out).String())
		return
	}
	g.randomInto(g.lval(out), w, g.rv(call.Args[1].Value), g.rv(call.Args[2].Value))
}

// randomInto generates lv = a random bit<w> value in [lo, hi] (random;
// PSA's Random.read).
func (g *gen) randomInto(lv string, w int, lo, hi string) {
	g.line("{")
	g.indent++
	g.line("__u64 rlo = (__u64)%s & %s, rhi = (__u64)%s & %s;", lo, mask(w), hi, mask(w))
	g.line("__u64 rn = rhi - rlo + 1, rv = 0;")
	g.line("if (rhi <= rlo)")
	g.line("\trv = 0;")
	g.line("else if (rn == 0) /* the full 64-bit range */")
	g.line("\trv = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();")
	g.line("else if ((rn & (rn - 1)) == 0)")
	g.line("\trv = (((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32()) & (rn - 1);")
	g.line("else if (rn <= 0x100000000ULL) {")
	g.line("\t/* Lemire: (x * n) >> 32, rejecting x whose low product falls under 2^32 mod n */")
	g.line("\t__u32 thr = (__u32)(0x100000000ULL %% rn);")
	g.line("\t__u64 m = 0;")
	g.line("#pragma unroll")
	g.line("\tfor (int k = 0; k < 4; k++) {")
	g.line("\t\tm = (__u64)bpf_get_prandom_u32() * rn;")
	g.line("\t\tif ((__u32)m >= thr)")
	g.line("\t\t\tbreak;")
	g.line("\t}")
	g.line("\trv = m >> 32;")
	g.line("} else")
	g.line("\trv = (((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32()) %% rn;")
	g.line("%s = (rlo + rv) & %s;", lv, mask(w))
	g.indent--
	g.line("}")
}

// truncate(len) records the length; the pipeline cuts the packet to it
// (when it is longer) after the deparser.
func (g *gen) truncate(call *syntax.Call) {
	g.needTruncate()
	g.line("s->trunc_len = (__u32)%s;", g.rv(call.Args[0].Value))
	g.line("s->trunc = 1;")
}

func (g *gen) needTruncate() {
	for _, f := range g.state {
		if f == "__u32 trunc_len" {
			return
		}
	}
	g.state = append(g.state, "__u32 trunc_len", "__u8 trunc", "__u8 dbg_fail")
}

// assertCheck generates assert(c) / assume(c): compiled out unless the C is
// built with P4_DEBUG 1 (p4.Options.Debug, `edgenf p4 compile --debug`);
// then a false condition counts in p4_assert_fail[site], logs the P4
// position to the trace pipe, and drops the packet after the pipeline.
func (g *gen) assertCheck(call *syntax.Call, cr *sema.CallRef) {
	g.needTruncate()
	site := len(g.assertSites)
	pos := call.Pos.String()
	g.assertSites = append(g.assertSites, pos)
	g.line("#if P4_DEBUG")
	g.line("if (!(%s)) {", g.rv(call.Args[0].Value))
	g.indent++
	g.line("__u32 ai = %d;", site)
	g.line("__u64 *ac = bpf_map_lookup_elem(&p4_assert_fail, &ai);")
	g.line("if (ac)")
	g.line("\t__sync_fetch_and_add(ac, 1);")
	g.line("bpf_printk(%s);", cString("p4: "+cr.Method+" failed at "+strings.ReplaceAll(pos, "%", "%%")))
	g.line("s->dbg_fail = 1;")
	g.indent--
	g.line("}")
	g.line("#endif")
}

// assertMaps returns the C for the assert failure counters.
func (g *gen) assertMaps() string {
	var b strings.Builder
	if len(g.assertSites) == 0 {
		return b.String()
	}
	b.WriteString("/* failures of assert/assume (checked with P4_DEBUG 1), one cell per call site:\n")
	for i, p := range g.assertSites {
		fmt.Fprintf(&b, " *   %d: %s\n", i, comment(p))
	}
	b.WriteString(" */\n")
	fmt.Fprintf(&b, "struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, %d);\n\t__type(key, __u32);\n\t__type(value, __u64);\n} p4_assert_fail SEC(\".maps\");\n\n", len(g.assertSites))
	return b.String()
}

// pipelineTail returns the C run after the deparser: debug drops and
// truncate.
func (g *gen) pipelineTail() {
	if !g.hasTruncState() {
		return
	}
	g.line("if (s->dbg_fail)")
	g.line("\treturn enf_drop(ctx, md);")
	g.line("if (s->trunc && s->trunc_len < ctx_len(ctx) && ctx_change_tail(ctx, s->trunc_len))")
	g.line("\treturn enf_drop(ctx, md);")
}

func (g *gen) hasTruncState() bool {
	for _, f := range g.state {
		if f == "__u32 trunc_len" {
			return true
		}
	}
	return false
}
