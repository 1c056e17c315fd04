package backend

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// The C types of P4 values (scalars, structs, tuples, header stacks), C literals,
// and bit packing of values wider than a C integer.

func mask(w int) string {
	if w >= 64 {
		return "0xffffffffffffffffULL"
	}
	return fmt.Sprintf("0x%xULL", (uint64(1)<<uint(w))-1)
}

func cint(v *big.Int) string {
	if v.Sign() >= 0 && v.BitLen() <= 64 {
		return fmt.Sprintf("0x%xULL", v.Uint64())
	}
	m := new(big.Int).And(v, new(big.Int).SetUint64(^uint64(0)))
	return fmt.Sprintf("0x%xULL", m.Uint64())
}

// ---------- types ----------

func scalarCType(w int) string {
	switch {
	case w <= 8:
		return "__u8"
	case w <= 16:
		return "__u16"
	case w <= 32:
		return "__u32"
	default:
		return "__u64"
	}
}

// decl returns a C declaration of name with P4 type t.
func (g *gen) decl(t sema.Type, name string, pos syntax.Pos) string {
	switch x := t.(type) {
	case *sema.Bits:
		if x.W > 64 {
			if x.W%8 != 0 {
				g.unsupported(pos, fmt.Sprintf("%s: values wider than 64 bits must be a whole number of bytes", x))
			}
			return fmt.Sprintf("__u8 %s[%d]", name, (x.W+7)/8)
		}
		return scalarCType(x.W) + " " + name
	case *sema.Bool:
		return "__u8 " + name
	case *sema.Enum:
		if x.Under != nil {
			return g.decl(x.Under, name, pos)
		}
		return "__u32 " + name
	case *sema.ErrorT:
		return "__u32 " + name
	case *sema.Struct:
		return g.structType(x, pos) + " " + name
	case *sema.Tuple:
		return g.tupleType(x, pos) + " " + name
	case *sema.Stack:
		return g.stackType(x, pos) + " " + name
	case *sema.Varbit:
		return g.varbitType(x) + " " + name
	}
	g.unsupported(pos, "variables of type "+t.String())
	return "__u8 " + name
}

// tupleType declares a C struct for a tuple type (fields f0, f1, ...).
func (g *gen) tupleType(tt *sema.Tuple, pos syntax.Pos) string {
	key := tt.String()
	if n, ok := g.tuples[key]; ok {
		return n
	}
	if g.tuples == nil {
		g.tuples = map[string]string{}
	}
	n := fmt.Sprintf("struct tup_%d", len(g.tuples))
	g.tuples[key] = n
	var b strings.Builder
	fmt.Fprintf(&b, "/* %s */\n%s {\n", comment(key), n)
	for i, e := range tt.Elems {
		fmt.Fprintf(&b, "\t%s;\n", g.decl(e, fmt.Sprintf("f%d", i), pos))
	}
	b.WriteString("};\n\n")
	g.types.WriteString(b.String())
	return n
}

func (g *gen) structType(st *sema.Struct, pos syntax.Pos) string {
	prefix := "s_"
	if st.Kind == "header" {
		prefix = "h_"
	} else if st.Kind == "header_union" {
		prefix = "u_"
	}
	cname := "struct " + prefix + ir.Sanitize(st.Name)
	if g.structs[st] {
		return cname
	}
	g.structs[st] = true
	var b strings.Builder
	fmt.Fprintf(&b, "%s {\n", cname)
	if st.Kind == "header" {
		b.WriteString("\t__u8 valid;\n")
	}
	for _, f := range st.Fields {
		fmt.Fprintf(&b, "\t%s;\n", g.decl(f.Type, "f_"+f.Name, pos))
	}
	if len(st.Fields) == 0 && st.Kind != "header" {
		b.WriteString("\t__u8 _empty;\n")
	}
	b.WriteString("};\n\n")
	g.types.WriteString(b.String())
	return cname
}

// stackType declares a C struct for a header stack: the elements and
// nextIndex (next).
func (g *gen) stackType(st *sema.Stack, pos syntax.Pos) string {
	el, ok := st.Elem.(*sema.Struct)
	if !ok {
		g.unsupported(pos, "stacks of "+st.Elem.String())
		return "__u8"
	}
	et := g.structType(el, pos)
	cname := fmt.Sprintf("struct hs_%s_%d", ir.Sanitize(el.Name), st.Size)
	if g.stacks == nil {
		g.stacks = map[string]bool{}
	}
	if g.stacks[cname] {
		return cname
	}
	g.stacks[cname] = true
	fmt.Fprintf(&g.types, "%s {\n\t%s e[%d];\n\t__u32 next;\n};\n\n", cname, et, st.Size)
	return cname
}

// ---------- bit packing ----------

// unpack returns a C expression reading w bits (w <= 64) at bit offset off
// (MSB first) of the byte array arr.
func unpack(arr string, off, w int) string {
	if off%8 == 0 && w%8 == 0 {
		return fmt.Sprintf("p4_be(%s + %d, %d)", arr, off/8, w/8)
	}
	end := off + w
	var parts []string
	for k := off / 8; k <= (end-1)/8; k++ {
		a, b := max(off, 8*k), min(end, 8*k+8)
		nb := b - a
		sh := 8*k + 8 - b
		piece := fmt.Sprintf("((__u64)((%s[%d] >> %d) & 0x%x) << %d)", arr, k, sh, (1<<uint(nb))-1, end-b)
		parts = append(parts, piece)
	}
	return "(" + strings.Join(parts, " | ") + ")"
}

// pack returns C statements writing the value v (w <= 64 bits) at bit
// offset off of arr.
func pack(arr string, off, w int, v string) string {
	if off%8 == 0 && w%8 == 0 {
		return fmt.Sprintf("p4_wbe(%s + %d, %s, %d);", arr, off/8, v, w/8)
	}
	var b strings.Builder
	b.WriteString("{ __u64 _v = " + v + "; ")
	end := off + w
	for k := off / 8; k <= (end-1)/8; k++ {
		a, e := max(off, 8*k), min(end, 8*k+8)
		nb := e - a
		sh := 8*k + 8 - e
		m := (1 << uint(nb)) - 1
		if nb == 8 {
			fmt.Fprintf(&b, "%s[%d] = (__u8)(_v >> %d); ", arr, k, end-e)
		} else {
			fmt.Fprintf(&b, "%s[%d] = (%s[%d] & 0x%x) | (__u8)(((_v >> %d) & 0x%x) << %d); ", arr, k, arr, k, 0xff&^(m<<uint(sh)), end-e, m, sh)
		}
	}
	b.WriteString("}")
	return b.String()
}

// ---------- helpers ----------

func isWide(t sema.Type) bool {
	b, ok := t.(*sema.Bits)
	return ok && b.W > 64
}

func width(t sema.Type) int {
	if b, ok := sema.BitsOf(t); ok {
		return b.W
	}
	switch t.(type) {
	case *sema.Bool:
		return 1
	case *sema.ErrorT:
		return 32
	case *sema.Enum:
		return 32
	}
	return sema.Width(t)
}

// usesField reports whether the program uses a standard_metadata field.
func (g *gen) usesField(name string) bool { return ir.UsesField(g.info, name) }

// comment makes text from the program safe inside a C comment: names from
// @name annotations may be any string. Letters, digits and punctuation that
// can neither end a comment nor continue a line are kept; anything else
// becomes '?'.
func comment(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.$@:<>[](),=+- ", c) >= 0) {
			b[i] = '?'
		}
	}
	return string(b)
}

// unparen drops the parentheses around a whole expression: conditions are
// generated inside their own ("if (%s)"), and clang warns about
// "if ((a == b))".
func unparen(s string) string {
	for len(s) >= 2 && s[0] == '(' && s[len(s)-1] == ')' && !strings.ContainsAny(s, "\"'") {
		depth := 0
		for i := 0; i < len(s)-1; i++ {
			switch s[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			if depth == 0 {
				return s // the first parenthesis closes before the end
			}
		}
		s = s[1 : len(s)-1]
	}
	return s
}

// cString is s as a C string literal: quotes and backslashes escaped,
// anything outside printable ASCII as an octal escape.
func cString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c > '~' || c == '?':
			fmt.Fprintf(&b, "\\%03o", c) // '?' too: no trigraphs
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
