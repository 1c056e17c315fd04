package p4path

import (
	"fmt"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// ---------- deparser ----------

// deparse prices the emits: headers in place get back the fields that
// may have changed, headers added or moved are written whole, and the
// frame's head moves when the lengths differ.
func (w *walker) deparse(st *state) {
	type em struct {
		name string
		h    hinst
	}
	var out []em
	total := 0
	for _, n := range st.emitted {
		h, ok := st.hdrs[n]
		if !ok {
			continue
		}
		out = append(out, em{n, h})
		total += h.bytes
	}
	if n := len(st.emitted); n > 0 {
		st.use(TermDeparseCheck, float64(n), fmt.Sprintf("deparser: %d %s checked", n, plural(n, "header", "headers")))
	}
	delta := st.off - total
	o := 0
	for _, e := range out {
		name := strings.TrimPrefix(e.name, "hdr.")
		if e.h.off >= 0 && e.h.off == o+delta {
			n := w.writtenFields(e.name, w.typeOfInstance(e.name))
			what := fmt.Sprintf("deparser: %s (%d %s written back)", name, n, plural(n, "field", "fields"))
			st.use(TermDeparseHeader, 1, what)
			st.use(TermDeparseField, float64(n), what)
		} else {
			what := fmt.Sprintf("deparser: %s (%d bytes written)", name, e.h.bytes)
			st.use(TermDeparseHeader, 1, what)
			st.use(TermDeparseByte, float64(e.h.bytes), what)
		}
		o += e.h.bytes
	}
	if delta != 0 {
		what := fmt.Sprintf("deparser: the frame %s by %d bytes", map[bool]string{true: "shrinks", false: "grows"}[delta > 0], abs(delta))
		st.use(TermHeadAdjust, 1, what)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// typeOfInstance finds the header type of a canonical instance name.
func (w *walker) typeOfInstance(name string) sema.Type {
	var t sema.Type = w.hType
	parts := strings.Split(strings.TrimPrefix(name, "hdr."), ".")
	if !strings.HasPrefix(name, "hdr.") {
		return nil
	}
	for _, p := range parts {
		idx := strings.IndexByte(p, '[')
		field := p
		if idx >= 0 {
			field = p[:idx]
		}
		st, ok := t.(*sema.Struct)
		if !ok {
			return nil
		}
		f := st.FieldByName(field)
		if f == nil {
			return nil
		}
		t = f.Type
		if idx >= 0 {
			if s, ok := t.(*sema.Stack); ok {
				t = s.Elem
			}
		}
	}
	return t
}

// ---------- rendering ----------

// exprString renders an expression for a branch description.
func exprString(e syntax.Expr) string {
	switch x := e.(type) {
	case nil:
		return ""
	case *syntax.IntLit:
		return x.Val.String()
	case *syntax.BoolLit:
		return fmt.Sprint(x.Value)
	case *syntax.Ident:
		return x.Name
	case *syntax.Member:
		return exprString(x.X) + "." + x.Name
	case *syntax.Index:
		return exprString(x.X) + "[" + exprString(x.Index) + "]"
	case *syntax.Slice:
		return exprString(x.X) + "[" + exprString(x.Hi) + ":" + exprString(x.Lo) + "]"
	case *syntax.Call:
		var as []string
		for _, a := range x.Args {
			as = append(as, exprString(a.Value))
		}
		return exprString(x.Fn) + "(" + strings.Join(as, ", ") + ")"
	case *syntax.Unary:
		return x.Op + exprString(x.X)
	case *syntax.Binary:
		return exprString(x.X) + " " + x.Op + " " + exprString(x.Y)
	case *syntax.Cast:
		return exprString(x.X)
	case *syntax.Default:
		return "default"
	case *syntax.TypeRef:
		switch t := x.Type.(type) {
		case *syntax.NamedType:
			return t.Name
		case *syntax.BaseType:
			return t.Kind
		}
		return "type"
	case *syntax.List:
		var as []string
		for _, el := range x.Elems {
			as = append(as, exprString(el))
		}
		return "{" + strings.Join(as, ", ") + "}"
	}
	return "…"
}
