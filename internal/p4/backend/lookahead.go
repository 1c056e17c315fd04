package backend

// packet.lookahead<T>() of a header or a struct of bit<N> fields: the next
// bytes of the packet unpacked into a value of T (a header comes back
// valid), without moving; error.PacketTooShort past the end. bit<N> up to
// 64 bits is parser.go's lookahead. Also extract<T>(_), which skips a T.

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// lookaheadValue generates the lookahead call and returns the C lvalue
// holding its value (one per type; read it before the next lookahead of
// the type).
func (g *gen) lookaheadValue(call *syntax.Call, st *sema.Struct) string {
	layout := st
	if st.Kind != "header" {
		layout = packedLayout(st)
	}
	nb := (sema.Width(st) + 7) / 8
	if nb > g.maxHdr {
		g.maxHdr = nb
	}
	name := "la_" + ir.Sanitize(st.Name)
	if g.spares == nil {
		g.spares = map[string]bool{}
	}
	if !g.spares[name] {
		g.spares[name] = true
		g.state = append(g.state, g.decl(st, name, call.Pos))
	}
	dst := "s->" + name
	g.runtCheck(fmt.Sprint(nb)) // parser.go
	g.line("if (p4_load(ctx, off, s->buf, %d)) {", nb)
	g.line("\ts->sm.f_parser_error = %d; /* error.PacketTooShort */", g.errorID("PacketTooShort"))
	g.line("\tgoto st_reject;")
	g.line("}")
	g.extractFields(dst, layout, "s->buf", call.Pos) // packet.go
	if st.Kind == "header" {
		g.line("%s.valid = 1;", dst)
	}
	return dst
}

// packedLayout is struct st with the bit offsets its fields have on the
// wire, one after the other (sema gives offsets to headers only).
func packedLayout(st *sema.Struct) *sema.Struct {
	l := &sema.Struct{Kind: "header", Name: st.Name}
	off := 0
	for _, f := range st.Fields {
		l.Fields = append(l.Fields, &sema.Field{Name: f.Name, Type: f.Type, Offset: off})
		off += sema.Width(f.Type)
	}
	l.Bits = off
	return l
}

// skipHeader generates extract<T>(_): the packet advances by the header's
// size, error.PacketTooShort past its end.
func (g *gen) skipHeader(bits int) {
	g.line("{")
	g.skipBytes(fmt.Sprint(bits / 8))
	g.line("}")
}
