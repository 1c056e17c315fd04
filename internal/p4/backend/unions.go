package backend

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Header unions and varbit fields.
//
// A header_union is a C struct with one member per header (struct u_X);
// each member keeps its own valid byte, and making one member valid
// (setValid, extract, assignment of a valid header) invalidates the others,
// so at most one is valid. u.isValid() is the OR of the members'.
//
// A varbit<N> field is struct vb_N { __u32 len; __u8 b[N/8]; }: len is the
// current size in bytes. Only the last field of a header can be a varbit.

// varbitType declares struct vb_N for varbit<N>.
func (g *gen) varbitType(vb *sema.Varbit) string {
	cname := fmt.Sprintf("struct vb_%d", vb.Max)
	if g.stacks == nil {
		g.stacks = map[string]bool{}
	}
	if !g.stacks[cname] {
		g.stacks[cname] = true
		fmt.Fprintf(&g.types, "/* varbit<%d>: len bytes of b are valid */\n%s {\n\t__u32 len;\n\t__u8 b[%d];\n};\n\n", vb.Max, cname, vb.Max/8)
	}
	return cname
}

// hdrBytes is the largest size of a header in bytes (fixed part and the
// varbit field at its maximum).
func hdrBytes(st *sema.Struct) int {
	n := st.Bits / 8
	if st.Varbit != nil {
		n += st.Varbit.Type.(*sema.Varbit).Max / 8
	}
	return n
}

// unionMember returns the union lvalue and the member name when e is a
// member of a header_union.
func (g *gen) unionMember(e syntax.Expr) (*sema.Struct, syntax.Expr, string) {
	m, ok := e.(*syntax.Member)
	if !ok {
		return nil, nil, ""
	}
	u, ok := g.typeOf(m.X).(*sema.Struct)
	if !ok || u.Kind != "header_union" {
		return nil, nil, ""
	}
	return u, m.X, m.Name
}

// unionInvalidateOthers invalidates the other members of e's union when e
// is a union member (cond: a C condition, "" for always).
func (g *gen) unionInvalidateOthers(e syntax.Expr, cond string) {
	u, ux, name := g.unionMember(e)
	if u == nil {
		return
	}
	base := g.lval(ux)
	if cond != "" {
		g.line("if (%s) {", unparen(cond))
		g.indent++
	}
	for _, f := range u.Fields {
		if f.Name != name {
			g.line("%s.f_%s.valid = 0; /* header_union: one member valid */", base, f.Name)
		}
	}
	if cond != "" {
		g.indent--
		g.line("}")
	}
}

// validExpr is e.isValid() for a header or a header_union.
func (g *gen) validExpr(e syntax.Expr) string {
	u, ok := g.typeOf(e).(*sema.Struct)
	if !ok || u.Kind != "header_union" {
		return "(" + g.lval(e) + ".valid)"
	}
	base := g.lval(e)
	s := "("
	for i, f := range u.Fields {
		if i > 0 {
			s += " || "
		}
		s += base + ".f_" + f.Name + ".valid"
	}
	if len(u.Fields) == 0 {
		s += "0"
	}
	return s + ")"
}

// hasVarbit reports whether the headers struct holds a header with a
// varbit field (the deparser then packs through the buffer).
func (g *gen) hasVarbit() bool {
	var walk func(t sema.Type) bool
	walk = func(t sema.Type) bool {
		switch x := t.(type) {
		case *sema.Stack:
			return walk(x.Elem)
		case *sema.Struct:
			if x.Kind == "header" {
				return x.Varbit != nil
			}
			for _, f := range x.Fields {
				if walk(f.Type) {
					return true
				}
			}
		}
		return false
	}
	return g.hTy != nil && walk(g.hTy)
}

// extractVarbit generates packet.extract(hdr, bits) for a header whose last
// field is varbit<N>. As in BMv2: bits not a multiple of 8 is
// error.ParserInvalidArgument, bits > N error.HeaderTooShort, a packet
// shorter than the fixed part plus bits/8 error.PacketTooShort.
func (g *gen) extractVarbit(arg, bits syntax.Expr) {
	st, ok := g.typeOf(arg).(*sema.Struct)
	if !ok || st.Kind != "header" || st.Varbit == nil {
		g.errorf(arg.NodePos(), "two-argument extract needs a header with a varbit field")
		return
	}
	g.stackIndexCheck(arg) // stacks.go
	if hs, sx := g.stackNext(arg); hs != nil {
		// hs.next: error.StackOutOfBounds when the stack is full (as extract)
		sc := g.lval(sx)
		g.line("if (%s.next >= %d) {", sc, hs.Size)
		g.line("	s->sm.f_parser_error = %d; /* error.StackOutOfBounds */", g.errorID("StackOutOfBounds"))
		g.line("	goto st_reject;")
		g.line("}")
		defer g.line("%s.next++;", sc)
	}
	vb := st.Varbit.Type.(*sema.Varbit)
	maxb := vb.Max / 8
	n := st.Bits / 8
	if n > g.maxHdr {
		g.maxHdr = n
	}
	dst := g.lval(arg)
	vf := dst + ".f_" + st.Varbit.Name
	g.line("{")
	g.indent++
	g.line("__u32 vbits = (__u32)%s, vlen;", g.rv(bits))
	g.line("if (vbits & 7) {")
	g.line("\ts->sm.f_parser_error = %d; /* error.ParserInvalidArgument */", g.errorID("ParserInvalidArgument"))
	g.line("\tgoto st_reject;")
	g.line("}")
	g.line("if (vbits > %d) {", vb.Max)
	g.line("\ts->sm.f_parser_error = %d; /* error.HeaderTooShort */", g.errorID("HeaderTooShort"))
	g.line("\tgoto st_reject;")
	g.line("}")
	g.line("vlen = vbits >> 3;")
	g.line("if ((__u64)off + %d + vlen > p4_plen(ctx)) {", n)
	g.line("\ts->sm.f_parser_error = %d; /* error.PacketTooShort */", g.errorID("PacketTooShort"))
	g.line("\tgoto st_reject;")
	g.line("}")
	if n > 0 {
		g.line("if (p4_load(ctx, off, s->buf, %d)) {", n)
		g.line("\ts->sm.f_parser_error = %d; /* error.PacketTooShort */", g.errorID("PacketTooShort"))
		g.line("\tgoto st_reject;")
		g.line("}")
		for _, f := range wireFields(st) {
			if f == st.Varbit {
				continue
			}
			w := width(f.Type)
			if w > 64 {
				g.line("p4_memcpy(%s.f_%s, s->buf + %d, %d);", dst, f.Name, f.Offset/8, w/8)
				continue
			}
			g.line("%s.f_%s = %s;", dst, f.Name, unpack("s->buf", f.Offset, w))
		}
	}
	g.line("%s.len = 0;", vf)
	g.line("{")
	g.line("\t/* vlen - 1 < %d, so that the verifier sees a size in 1..%d */", maxb, maxb)
	g.line("\t__u32 vm1 = vlen - 1;")
	g.line("\tasm volatile(\"\" : \"+r\"(vm1));")
	g.line("\tif (vm1 < %d && p4_load_h(ctx, off + %d, %s.b, vm1 + 1)) {", maxb, n, vf)
	g.line("\t\ts->sm.f_parser_error = %d; /* error.PacketTooShort */", g.errorID("PacketTooShort"))
	g.line("\t\tgoto st_reject;")
	g.line("\t}")
	g.line("\tif (vm1 < %d)", maxb)
	g.line("\t\t%s.len = vlen;", vf)
	g.line("}")
	g.line("%s.valid = 1;", dst)
	g.line("off += %d + vlen;", n)
	g.indent--
	g.line("}")
	g.unionInvalidateOthers(arg, "")
}

// emitVarbitHeader emits a header with a varbit field (buffer or length
// mode; the deparser never writes such headers straight into the packet).
func (g *gen) emitVarbitHeader(c string, st *sema.Struct) {
	n := st.Bits / 8
	vb := st.Varbit.Type.(*sema.Varbit)
	maxb := vb.Max / 8
	vf := c + ".f_" + st.Varbit.Name
	if g.emitMode == emitLength {
		g.line("if (%s.valid)", c)
		g.line("\to += %d + (%s.len <= %d ? %s.len : %d);", n, vf, maxb, vf, maxb)
		return
	}
	if g.emitMode == emitPacket {
		g.errorf(syntax.Pos{}, "internal: a varbit header in a direct deparser")
		return
	}
	g.line("if (%s.valid) {", c)
	g.indent++
	if len(st.Fields) > 1 { // fields before the varbit one
		g.line("__u8 *b = s->obuf + (o & P4_OBUF_MASK);")
	}
	g.line("__u32 vl = %s.len;", vf)
	for _, f := range wireFields(st) {
		if f == st.Varbit {
			continue
		}
		w := width(f.Type)
		if w > 64 {
			g.line("p4_memcpy(b + %d, %s.f_%s, %d);", f.Offset/8, c, f.Name, w/8)
			continue
		}
		g.line("%s", pack("b", f.Offset, w, fmt.Sprintf("(__u64)%s.f_%s", c, f.Name)))
	}
	if n > 0 {
		g.line("o += %d;", n)
	}
	g.line("for (__u32 i = 0; i < %d; i++) {", maxb)
	g.line("\tif (i >= vl)")
	g.line("\t\tbreak;")
	g.line("\ts->obuf[(o + i) & P4_OBUF_MASK] = %s.b[i];", vf)
	g.line("}")
	g.line("o += vl <= %d ? vl : %d;", maxb, maxb)
	g.indent--
	g.line("}")
}

// packVarbit packs a varbit field into s->cbuf at bit offset bits: its
// bytes, then zeros up to its maximum size. The zeros leave a ones'
// complement sum unchanged, so csum16 over a list ending in (or holding) a
// varbit field is exact with a constant length.
func (g *gen) packVarbit(c string, vb *sema.Varbit, bits int, pos syntax.Pos) int {
	if bits%8 != 0 {
		g.unsupported(pos, "a varbit field at a non-byte offset in a field list")
		return bits
	}
	maxb := vb.Max / 8
	g.line("for (__u32 i = 0; i < %d; i++)", maxb)
	g.line("\ts->cbuf[%d + i] = i < %s.len ? %s.b[i] : 0;", bits/8, c, c)
	return bits + vb.Max
}

// listHasVarbit reports whether a field list holds a varbit field.
func (g *gen) listHasVarbit(e syntax.Expr) bool {
	var has func(t sema.Type) bool
	has = func(t sema.Type) bool {
		switch x := t.(type) {
		case *sema.Varbit:
			return true
		case *sema.Struct:
			for _, f := range x.Fields {
				if has(f.Type) {
					return true
				}
			}
		case *sema.Tuple:
			for _, el := range x.Elems {
				if has(el) {
					return true
				}
			}
		}
		return false
	}
	if l, ok := e.(*syntax.List); ok {
		for _, el := range l.Elems {
			if has(g.typeOf(el)) {
				return true
			}
		}
		return false
	}
	return has(g.typeOf(e))
}
