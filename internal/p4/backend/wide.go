package backend

// Values wider than 64 bits (bit<128> IPv6 addresses) are big-endian byte
// arrays in C. wref gives a pointer to one: a location's bytes, a constant's
// literal, or, for a computed value, a scratch array on the stack filled
// by the statements wideValue emits before the one being generated, with
// the helpers of bpf/include/edgenf/p4/wide.h. The operands of an
// expression are pure (side effects are settled before, effects.go), so
// computing both arms of a ?: is only a cost, never a behaviour.

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// wtmp declares a scratch array of n bytes and returns its name.
func (g *gen) wtmp(n int) string {
	d := g.newTmp("w")
	g.line("__u8 %s[%d];", d, n)
	return d
}

// wideValue emits the computation of the wide value of e and returns a C
// pointer to its bytes; false for an expression it does not compute.
func (g *gen) wideValue(e syntax.Expr) (string, bool) {
	t := g.typeOf(e)
	n := width(t) / 8
	if b, ok := t.(*sema.Bits); ok && b.Signed {
		return "", false
	}
	switch x := e.(type) {
	case *syntax.Binary:
		switch x.Op {
		case "&", "|", "^", "+", "-":
			a, b := g.wref(x.X), g.wref(x.Y)
			fn := map[string]string{"&": "p4_wand", "|": "p4_wor", "^": "p4_wxor", "+": "p4_wadd", "-": "p4_wsub"}[x.Op]
			d := g.wtmp(n)
			g.line("%s(%s, %s, %s, %d);", fn, d, a, b, n)
			return d, true
		case "<<", ">>":
			a := g.wref(x.X)
			sh := g.rv(x.Y)
			d := g.wtmp(n)
			fn := "p4_wshl"
			if x.Op == ">>" {
				fn = "p4_wshr"
			}
			g.line("%s(%s, %s, (__u64)%s, %d);", fn, d, a, sh, n)
			return d, true
		case "++":
			return g.wideConcat(x, n)
		}
	case *syntax.Unary:
		a := g.wref(x.X)
		d := g.wtmp(n)
		switch x.Op {
		case "~":
			g.line("p4_wnot(%s, %s, %d);", d, a, n)
			return d, true
		case "-":
			g.line("p4_wneg(%s, %s, %d);", d, a, n)
			return d, true
		}
	case *syntax.Cast:
		return g.wideCast(x, n)
	case *syntax.Slice:
		base, hi, lo := g.flatSlice(x)
		bw := width(g.typeOf(base))
		if !isWide(g.typeOf(base)) {
			return "", false
		}
		src := g.wref(base)
		if lo%8 == 0 {
			return fmt.Sprintf("(%s + %d)", src, (bw-1-hi)/8), true
		}
		d := g.wtmp(bw / 8)
		g.line("p4_wshr(%s, %s, %d, %d);", d, src, lo, bw/8)
		return fmt.Sprintf("(%s + %d)", d, bw/8-n), true
	case *syntax.Cond:
		c := g.rv(x.Cond)
		return fmt.Sprintf("(%s ? %s : %s)", c, g.wref(x.Then), g.wref(x.Else)), true
	}
	return "", false
}

// wideCast converts to a wide bit<W>: a narrower value is zero-extended
// (sign-extended from int<N>), a wider one keeps its low bytes.
func (g *gen) wideCast(x *syntax.Cast, n int) (string, bool) {
	from := g.typeOf(x.X)
	if isWide(from) {
		fn := width(from) / 8
		src := g.wref(x.X)
		if fn >= n {
			return fmt.Sprintf("(%s + %d)", src, fn-n), true
		}
		d := g.wtmp(n)
		g.line("p4_wfrom64(%s, 0, 0, %d);", d, n)
		g.line("p4_memcpy(%s + %d, %s, %d);", d, n-fn, src, fn)
		return d, true
	}
	fb, ok := sema.BitsOf(from)
	if _, isBool := from.(*sema.Bool); !ok && !isBool {
		return "", false
	}
	v := g.rv(x.X)
	d := g.wtmp(n)
	if ok && fb.Signed {
		t := g.settle(fmt.Sprintf("(__u64)P4_SEXT(%s, %d)", v, fb.W))
		g.line("p4_wfrom64(%s, %s, (__s64)%s < 0 ? 0xff : 0, %d);", d, t, t, n)
	} else {
		g.line("p4_wfrom64(%s, (__u64)%s, 0, %d);", d, v, n)
	}
	return d, true
}

// wideConcat is a ++ b with a wide result: a in the high bits, b after it.
func (g *gen) wideConcat(x *syntax.Binary, n int) (string, bool) {
	wa, wb := width(g.typeOf(x.X)), width(g.typeOf(x.Y))
	if isWide(g.typeOf(x.Y)) && wa%8 != 0 {
		g.unsupported(x.Pos, "++ of a value wider than 64 bits after one that is not a whole number of bytes")
		return "(__u8 *)0", true
	}
	d := g.wtmp(n)
	g.line("p4_wfrom64(%s, 0, 0, %d);", d, n)
	if isWide(g.typeOf(x.X)) {
		g.line("p4_memcpy(%s, %s, %d);", d, g.wref(x.X), wa/8)
	} else {
		g.line("%s", pack(d, 0, wa, "(__u64)"+g.rv(x.X)))
	}
	if isWide(g.typeOf(x.Y)) {
		g.line("p4_memcpy(%s + %d, %s, %d);", d, wa/8, g.wref(x.Y), wb/8)
	} else {
		g.line("%s", pack(d, wa, wb, "(__u64)"+g.rv(x.Y)))
	}
	return d, true
}

// wideCompare is a < > <= >= comparison of wide unsigned values.
func (g *gen) wideCompare(x *syntax.Binary, ot sema.Type) string {
	return fmt.Sprintf("(p4_wcmp(%s, %s, %d) %s 0)", g.wref(x.X), g.wref(x.Y), width(ot)/8, x.Op)
}
