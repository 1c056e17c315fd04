package sema

import "github.com/edgenf/edgenf/internal/p4/syntax"

// Header unions and varbit fields.

// varbitField checks a varbit<N> header field: edgenf needs it to be the
// header's last field and N a positive multiple of 8 (at most 8192).
func (c *checker) varbitField(st *Struct, f *syntax.Field, vb *Varbit, nfields int) {
	switch {
	case st.Varbit != nil:
		c.errorf(f.Pos, "header %s has more than one varbit field", st.Name)
	case len(st.Fields) != nfields-1:
		c.unsupported(f.Pos, "fields after a varbit field (the varbit field must be the header's last)")
	case vb.Max <= 0 || vb.Max%8 != 0 || vb.Max > 8192:
		c.unsupported(f.Pos, "varbit<N> with N not a multiple of 8 in 8..8192")
	}
}

// unionField checks a member of a header_union: a header.
func (c *checker) unionField(x *syntax.StructDecl, f *syntax.Field, ft Type) {
	if bad(ft) {
		return
	}
	if s, ok := ft.(*Stack); ok {
		if !bad(s.Elem) {
			c.errorf(f.Pos, "header_union %s: member %s must be a header, not a stack", x.Name, f.Name)
		}
		return
	}
	if !IsHeader(ft) {
		c.errorf(f.Pos, "header_union %s: member %s has type %s; members must be headers", x.Name, f.Name, ft)
	}
}

// IsUnion reports whether t is a header_union type.
func IsUnion(t Type) bool {
	s, ok := t.(*Struct)
	return ok && s.Kind == "header_union"
}

// extractVarbit checks the number of arguments of extract against the
// header: two (the varbit field's size in bits) for a header with a varbit
// field, one otherwise.
func (c *checker) extractVarbit(x *syntax.Call) {
	h, _ := c.info.Types[x.Args[0].Value].(*Struct)
	switch {
	case h == nil:
	case h.Varbit != nil && len(x.Args) != 2:
		c.errorf(x.Pos, "header %s has a varbit field: extract it with two arguments, extract(hdr, bits)", h.Name)
	case h.Varbit == nil && len(x.Args) == 2:
		c.errorf(x.Pos, "two-argument extract needs a header with a varbit field; %s has none", h.Name)
	}
}
