package backend

// Structs inside headers (P4-16 1.2.2+): a header field may be a struct of
// bit<N>, int<N>, bool and serializable-enum fields, nested. In C the header
// keeps the struct (struct h_x { __u8 valid; struct s_y f_row; }), so that
// expressions, l-values, copies and equality see it as P4 does; on the wire
// it is its fields one after the other. wireFields gives the header's
// fields in wire order with the struct ones flattened, each named by its C
// path below the header ("row.f_e": .f_ + name is the member access), at
// its bit offset in the header: the parser, the deparser, lookahead and the
// checksum/field-list packing walk these.

import "github.com/edgenf/edgenf/internal/p4/sema"

// wireFields returns st's fields as laid out on the wire; st.Fields itself
// when no field is a struct.
func wireFields(st *sema.Struct) []*sema.Field {
	nested := false
	for _, f := range st.Fields {
		if _, ok := f.Type.(*sema.Struct); ok {
			nested = true
		}
	}
	if !nested {
		return st.Fields
	}
	var out []*sema.Field
	var add func(prefix string, fields []*sema.Field, off int) int
	add = func(prefix string, fields []*sema.Field, off int) int {
		for _, f := range fields {
			if sub, ok := f.Type.(*sema.Struct); ok {
				off = add(prefix+f.Name+".f_", sub.Fields, off)
				continue
			}
			out = append(out, &sema.Field{Name: prefix + f.Name, Type: f.Type, Offset: off, Annots: f.Annots})
			off += sema.Width(f.Type)
		}
		return off
	}
	for _, f := range st.Fields {
		if sub, ok := f.Type.(*sema.Struct); ok {
			add(f.Name+".f_", sub.Fields, f.Offset)
			continue
		}
		out = append(out, f)
	}
	return out
}
