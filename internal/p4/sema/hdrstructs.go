package sema

import "github.com/edgenf/edgenf/internal/p4/syntax"

// headerStructField checks a header field whose type is a struct (P4-16
// 1.2.2+): every field of the struct, nested structs included, must have a
// fixed wire width (bit<N>, int<N>, bool, enum bit<N>), since the struct is
// laid out on the wire as its fields one after the other.
func (c *checker) headerStructField(f *syntax.Field, st *Struct) {
	if st.Kind != "struct" {
		c.errorf(f.Pos, "header field %s has type %s; a header cannot hold a %s", f.Name, st.Name, st.Kind)
		return
	}
	var walk func(path string, st *Struct)
	walk = func(path string, st *Struct) {
		for _, sf := range st.Fields {
			switch y := sf.Type.(type) {
			case *Bits, *Bool:
				continue
			case *Enum:
				if y.Under != nil {
					continue
				}
			case *Struct:
				if y.Kind == "struct" {
					walk(path+"."+sf.Name, y)
					continue
				}
			case *Invalid:
				continue
			}
			c.errorf(f.Pos, "header field %s has type %s, whose field %s.%s is a %s; a struct inside a header may only hold bit<N>, int<N>, bool, enum bit<N> and structs of them", f.Name, st.Name, path, sf.Name, sf.Type)
		}
	}
	walk(f.Name, st)
}
