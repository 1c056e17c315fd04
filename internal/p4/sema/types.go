// Package sema type-checks a parsed P4-16 program: it resolves names,
// computes the type of every expression, folds constants and checks the
// subset edgenf compiles. Its Info is what the IR and the backend consume.
package sema

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Type is a P4 type.
type Type interface{ String() string }

type (
	// Bits is bit<W> or int<W> (Signed).
	Bits struct {
		W      int
		Signed bool
	}
	// InfInt is the type of an integer literal without a width.
	InfInt struct{}
	Bool   struct{}
	Str    struct{}
	Void   struct{}
	// ErrorT is the error type; ids index Info.ErrorNames.
	ErrorT     struct{}
	MatchKindT struct{}
	// Enum is an enum; Under is non-nil for serializable enums (enum bit<W>).
	Enum struct {
		Name    string
		Under   *Bits
		Members []string
		Values  []*big.Int
	}
	// Field is a field of a header or struct.
	Field struct {
		Name   string
		Type   Type
		Offset int // bit offset inside a header (headers only)
		Annots syntax.Annotations
	}
	// Struct is a struct, header or header_union.
	Struct struct {
		Kind   string // "struct", "header", "header_union"
		Name   string
		Fields []*Field
		Bits   int // headers: total width (without the varbit field)
		// Varbit is a header's varbit field (edgenf: the last field), if any.
		Varbit *Field
	}
	Tuple struct{ Elems []Type }
	// ListT is the type of a {..} expression before it meets a target type.
	ListT struct{ Elems []Type }
	Stack struct {
		Elem Type
		Size int
	}
	Varbit struct{ Max int }
	// ExternT is an extern object type (instantiated with TypeArgs).
	ExternT struct {
		Decl     *syntax.ExternDecl
		TypeArgs []Type
	}
	// BlockT is a parser, control or package type.
	BlockT struct {
		Kind   string
		Name   string
		Params []*syntax.Param
		Decl   syntax.Decl
	}
	// TypeVar is a type parameter of a generic declaration.
	TypeVar struct{ Name string }
	// TableT is the type of a table name.
	TableT struct{ Table *Table }
	// ApplyResult is the type of t.apply().
	ApplyResult struct{ Table *Table }
	// ActionRunT is the type of t.apply().action_run.
	ActionRunT struct{ Table *Table }
	// ActionT is the type of an action name.
	ActionT struct{ Action *Action }
	// DontCare is the type of _.
	DontCare struct{}
	// Invalid is the type of an expression that already had an error; it
	// is compatible with everything so one mistake gives one message.
	Invalid struct{}
)

func (*Invalid) String() string { return "<error>" }

func bad(t Type) bool {
	_, ok := t.(*Invalid)
	return ok || t == nil
}

func (t *Bits) String() string {
	if t.Signed {
		return fmt.Sprintf("int<%d>", t.W)
	}
	return fmt.Sprintf("bit<%d>", t.W)
}
func (*InfInt) String() string        { return "int" }
func (*Bool) String() string          { return "bool" }
func (*Str) String() string           { return "string" }
func (*Void) String() string          { return "void" }
func (*ErrorT) String() string        { return "error" }
func (*MatchKindT) String() string    { return "match_kind" }
func (t *Enum) String() string        { return t.Name }
func (t *Struct) String() string      { return t.Name }
func (t *Stack) String() string       { return fmt.Sprintf("%s[%d]", t.Elem, t.Size) }
func (t *Varbit) String() string      { return fmt.Sprintf("varbit<%d>", t.Max) }
func (t *ExternT) String() string     { return t.Decl.Name }
func (t *BlockT) String() string      { return t.Name }
func (t *TypeVar) String() string     { return t.Name }
func (t *TableT) String() string      { return "table " + t.Table.Name }
func (t *ApplyResult) String() string { return "apply result of " + t.Table.Name }
func (t *ActionRunT) String() string  { return "action_run of " + t.Table.Name }
func (t *ActionT) String() string     { return "action " + t.Action.Name }
func (*DontCare) String() string      { return "_" }
func (t *Tuple) String() string {
	var s []string
	for _, e := range t.Elems {
		s = append(s, e.String())
	}
	return "tuple<" + strings.Join(s, ", ") + ">"
}
func (t *ListT) String() string {
	var s []string
	for _, e := range t.Elems {
		s = append(s, e.String())
	}
	return "{" + strings.Join(s, ", ") + "}"
}

// FieldByName returns a field of a struct or header, or nil.
func (t *Struct) FieldByName(n string) *Field {
	for _, f := range t.Fields {
		if f.Name == n {
			return f
		}
	}
	return nil
}

// IsHeader reports whether t is a header type.
func IsHeader(t Type) bool {
	s, ok := t.(*Struct)
	return ok && s.Kind == "header"
}

// BitsOf returns the Bits type of t if it is bit/int or a serializable enum.
func BitsOf(t Type) (*Bits, bool) {
	switch x := t.(type) {
	case *Bits:
		return x, true
	case *Enum:
		if x.Under != nil {
			return x.Under, true
		}
	case *Bool:
		return &Bits{W: 1}, true
	}
	return nil, false
}

// Width returns the width in bits of a fixed-width type (bit, int, bool,
// serializable enum, header, struct of those), or -1.
func Width(t Type) int {
	switch x := t.(type) {
	case *Bits:
		return x.W
	case *Bool:
		return 1
	case *Enum:
		if x.Under != nil {
			return x.Under.W
		}
		return 32
	case *ErrorT:
		return 32
	case *Struct:
		w := 0
		for _, f := range x.Fields {
			fw := Width(f.Type)
			if fw < 0 {
				return -1
			}
			w += fw
		}
		return w
	}
	return -1
}

func sameType(a, b Type) bool {
	switch x := a.(type) {
	case *Bits:
		y, ok := b.(*Bits)
		return ok && x.W == y.W && x.Signed == y.Signed
	case *Bool:
		_, ok := b.(*Bool)
		return ok
	case *ErrorT:
		_, ok := b.(*ErrorT)
		return ok
	case *Stack:
		y, ok := b.(*Stack)
		return ok && x.Size == y.Size && sameType(x.Elem, y.Elem)
	case *Varbit:
		y, ok := b.(*Varbit)
		return ok && x.Max == y.Max
	case *Tuple:
		y, ok := b.(*Tuple)
		if !ok || len(x.Elems) != len(y.Elems) {
			return false
		}
		for i := range x.Elems {
			if !sameType(x.Elems[i], y.Elems[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}
