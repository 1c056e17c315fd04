package syntax

import "math/big"

// Node is any AST node.
type Node interface{ NodePos() Pos }

// Annotation is @name or @name(...) / @name[...]; Args holds parsed
// expressions when the body parses as an expression list, Raw the tokens.
type Annotation struct {
	Pos  Pos
	Name string
	Args []Expr
	Raw  []Token
}

// Annotations is a list of annotations.
type Annotations []*Annotation

// Get returns the annotation named n, or nil.
func (a Annotations) Get(n string) *Annotation {
	for _, x := range a {
		if x.Name == n {
			return x
		}
	}
	return nil
}

// String returns the string argument of annotation n ("" if none).
func (a Annotations) String(n string) (string, bool) {
	x := a.Get(n)
	if x == nil || len(x.Args) != 1 {
		return "", false
	}
	if s, ok := x.Args[0].(*StringLit); ok {
		return s.Value, true
	}
	return "", false
}

// ---------- types ----------

// Type is a type expression in the source.
type Type interface {
	Node
	typeNode()
}

// BaseType is bit<W>, int<W>, varbit<W>, bool, error, string, void, match_kind, or int (infinite precision).
type BaseType struct {
	Pos   Pos
	Kind  string // "bit", "int", "varbit", "bool", "error", "string", "void", "match_kind"
	Width Expr   // nil when not given
}

// NamedType is a reference to a declared type, with optional type arguments.
type NamedType struct {
	Pos  Pos
	Name string
	Args []Type
}

// TupleType is tuple<T1, T2, ...>.
type TupleType struct {
	Pos   Pos
	Elems []Type
}

// StackType is T[N] (header stack).
type StackType struct {
	Pos  Pos
	Elem Type
	Size Expr
}

// DontCareType is _ used as a type argument.
type DontCareType struct{ Pos Pos }

func (t *BaseType) NodePos() Pos     { return t.Pos }
func (t *NamedType) NodePos() Pos    { return t.Pos }
func (t *TupleType) NodePos() Pos    { return t.Pos }
func (t *StackType) NodePos() Pos    { return t.Pos }
func (t *DontCareType) NodePos() Pos { return t.Pos }
func (*BaseType) typeNode()          {}
func (*NamedType) typeNode()         {}
func (*TupleType) typeNode()         {}
func (*StackType) typeNode()         {}
func (*DontCareType) typeNode()      {}

// ---------- expressions ----------

// Expr is an expression.
type Expr interface {
	Node
	exprNode()
}

type (
	IntLit struct {
		Pos      Pos
		Val      *big.Int
		Width    int
		Signed   bool
		HasWidth bool
	}
	BoolLit struct {
		Pos   Pos
		Value bool
	}
	StringLit struct {
		Pos   Pos
		Value string
	}
	// Ident is a name; Global is set for .name (top-level scope).
	Ident struct {
		Pos    Pos
		Name   string
		Global bool
	}
	Member struct {
		Pos  Pos // position of the member name
		X    Expr
		Name string
	}
	Index struct {
		Pos   Pos
		X     Expr
		Index Expr
	}
	Slice struct {
		Pos    Pos
		X      Expr
		Hi, Lo Expr
	}
	Arg struct {
		Name  string // named argument, or ""
		Value Expr   // nil for _ (don't care)
	}
	Call struct {
		Pos      Pos
		Fn       Expr
		TypeArgs []Type
		Args     []Arg
	}
	Unary struct {
		Pos Pos
		Op  string // - ~ !
		X   Expr
	}
	Binary struct {
		Pos  Pos
		Op   string
		X, Y Expr
	}
	Cond struct {
		Pos              Pos
		Cond, Then, Else Expr
	}
	Cast struct {
		Pos  Pos
		Type Type
		X    Expr
	}
	// List is {a, b, ...} (tuple/struct initializer or keyset tuple).
	List struct {
		Pos   Pos
		Elems []Expr
	}
	// Mask is a &&& b in a keyset.
	Mask struct {
		Pos         Pos
		Value, Mask Expr
	}
	// Range is a .. b in a keyset.
	Range struct {
		Pos    Pos
		Lo, Hi Expr
	}
	// Default is default or _ in a keyset.
	Default struct {
		Pos      Pos
		DontCare bool
	}
	// TypeRef is a type used in expression position (e.g. bit<8>.minSizeInBits, or an enum type name before .member).
	TypeRef struct {
		Pos  Pos
		Type Type
	}
)

func (e *IntLit) NodePos() Pos    { return e.Pos }
func (e *BoolLit) NodePos() Pos   { return e.Pos }
func (e *StringLit) NodePos() Pos { return e.Pos }
func (e *Ident) NodePos() Pos     { return e.Pos }
func (e *Member) NodePos() Pos    { return e.Pos }
func (e *Index) NodePos() Pos     { return e.Pos }
func (e *Slice) NodePos() Pos     { return e.Pos }
func (e *Call) NodePos() Pos      { return e.Pos }
func (e *Unary) NodePos() Pos     { return e.Pos }
func (e *Binary) NodePos() Pos    { return e.Pos }
func (e *Cond) NodePos() Pos      { return e.Pos }
func (e *Cast) NodePos() Pos      { return e.Pos }
func (e *List) NodePos() Pos      { return e.Pos }
func (e *Mask) NodePos() Pos      { return e.Pos }
func (e *Range) NodePos() Pos     { return e.Pos }
func (e *Default) NodePos() Pos   { return e.Pos }
func (e *TypeRef) NodePos() Pos   { return e.Pos }
func (*IntLit) exprNode()         {}
func (*BoolLit) exprNode()        {}
func (*StringLit) exprNode()      {}
func (*Ident) exprNode()          {}
func (*Member) exprNode()         {}
func (*Index) exprNode()          {}
func (*Slice) exprNode()          {}
func (*Call) exprNode()           {}
func (*Unary) exprNode()          {}
func (*Binary) exprNode()         {}
func (*Cond) exprNode()           {}
func (*Cast) exprNode()           {}
func (*List) exprNode()           {}
func (*Mask) exprNode()           {}
func (*Range) exprNode()          {}
func (*Default) exprNode()        {}
func (*TypeRef) exprNode()        {}

// ---------- statements ----------

// Stmt is a statement.
type Stmt interface {
	Node
	stmtNode()
}

type (
	AssignStmt struct {
		Pos Pos
		Op  string // "=" or a compound operator like "+="
		LHS Expr
		RHS Expr
	}
	CallStmt struct {
		Pos  Pos
		Call *Call
	}
	IfStmt struct {
		Pos  Pos
		Cond Expr
		Then Stmt
		Else Stmt // nil when absent
	}
	BlockStmt struct {
		Pos   Pos
		Stmts []Stmt
		// Annotations of a block statement (@atomic { ... }).
		Annotations Annotations
	}
	ExitStmt   struct{ Pos Pos }
	ReturnStmt struct {
		Pos   Pos
		Value Expr
	}
	EmptyStmt  struct{ Pos Pos }
	SwitchCase struct {
		Pos    Pos
		Labels []Expr     // Default for default
		Body   *BlockStmt // nil means fall through to the next case
	}
	SwitchStmt struct {
		Pos   Pos
		X     Expr
		Cases []*SwitchCase
	}
	// DeclStmt is a local variable or constant declaration.
	DeclStmt struct {
		Pos  Pos
		Decl Decl
	}
)

func (s *AssignStmt) NodePos() Pos { return s.Pos }
func (s *CallStmt) NodePos() Pos   { return s.Pos }
func (s *IfStmt) NodePos() Pos     { return s.Pos }
func (s *BlockStmt) NodePos() Pos  { return s.Pos }
func (s *ExitStmt) NodePos() Pos   { return s.Pos }
func (s *ReturnStmt) NodePos() Pos { return s.Pos }
func (s *EmptyStmt) NodePos() Pos  { return s.Pos }
func (s *SwitchStmt) NodePos() Pos { return s.Pos }
func (s *DeclStmt) NodePos() Pos   { return s.Pos }
func (*AssignStmt) stmtNode()      {}
func (*CallStmt) stmtNode()        {}
func (*IfStmt) stmtNode()          {}
func (*BlockStmt) stmtNode()       {}
func (*ExitStmt) stmtNode()        {}
func (*ReturnStmt) stmtNode()      {}
func (*EmptyStmt) stmtNode()       {}
func (*SwitchStmt) stmtNode()      {}
func (*DeclStmt) stmtNode()        {}

// ---------- declarations ----------

// Decl is a declaration.
type Decl interface {
	Node
	DeclName() string
}

// Param is a parameter of an action, control, parser, extern method or package.
type Param struct {
	Pos         Pos
	Annotations Annotations
	Dir         string // "", "in", "out", "inout"
	Type        Type
	Name        string
	Default     Expr
}

// Field is a header/struct field.
type Field struct {
	Pos         Pos
	Annotations Annotations
	Type        Type
	Name        string
}

// EnumMember is one member of an enum, error or match_kind.
type EnumMember struct {
	Pos   Pos
	Name  string
	Value Expr // serializable enums only
}

type (
	ConstDecl struct {
		Pos         Pos
		Annotations Annotations
		Type        Type
		Name        string
		Value       Expr
	}
	VarDecl struct {
		Pos         Pos
		Annotations Annotations
		Type        Type
		Name        string
		Init        Expr
	}
	// TypedefDecl is typedef T name; or type T name; (New is true for type).
	TypedefDecl struct {
		Pos         Pos
		Annotations Annotations
		Type        Type
		Name        string
		New         bool
	}
	// StructDecl is header, header_union or struct.
	StructDecl struct {
		Pos         Pos
		Annotations Annotations
		Kind        string // "header", "header_union", "struct"
		Name        string
		TypeParams  []string
		Fields      []*Field
	}
	EnumDecl struct {
		Pos         Pos
		Annotations Annotations
		Name        string
		Underlying  Type // nil for plain enums
		Members     []*EnumMember
	}
	// ErrorDecl is error { ... } or match_kind { ... } (Kind tells which).
	ErrorDecl struct {
		Pos     Pos
		Kind    string // "error" or "match_kind"
		Members []*EnumMember
	}
	// FuncProto is an extern function or extern method / constructor prototype.
	FuncProto struct {
		Pos         Pos
		Annotations Annotations
		Ret         Type // nil for constructors
		Name        string
		TypeParams  []string
		Params      []*Param
		Abstract    bool
	}
	ExternDecl struct {
		Pos         Pos
		Annotations Annotations
		Name        string
		TypeParams  []string
		Methods     []*FuncProto
	}
	// ExternFuncDecl is "extern R f<...>(...);".
	ExternFuncDecl struct {
		Proto *FuncProto
	}
	// FunctionDecl is a P4 function with a body.
	FunctionDecl struct {
		Proto *FuncProto
		Body  *BlockStmt
	}
	// BlockTypeDecl is a parser, control or package type declaration (no body).
	BlockTypeDecl struct {
		Pos         Pos
		Annotations Annotations
		Kind        string // "parser", "control", "package"
		Name        string
		TypeParams  []string
		Params      []*Param
	}
	ParserDecl struct {
		Pos         Pos
		Annotations Annotations
		Name        string
		TypeParams  []string
		Params      []*Param
		CtorParams  []*Param
		Locals      []Decl
		States      []*ParserState
	}
	ControlDecl struct {
		Pos         Pos
		Annotations Annotations
		Name        string
		TypeParams  []string
		Params      []*Param
		CtorParams  []*Param
		Locals      []Decl
		Body        *BlockStmt
	}
	ActionDecl struct {
		Pos         Pos
		Annotations Annotations
		Name        string
		Params      []*Param
		Body        *BlockStmt
	}
	TableDecl struct {
		Pos         Pos
		Annotations Annotations
		Name        string
		Props       []*TableProp
	}
	// InstanceDecl is T(args) name; (externs, parsers, controls, packages).
	InstanceDecl struct {
		Pos         Pos
		Annotations Annotations
		Type        Type
		Args        []Arg
		Name        string
	}
	ValueSetDecl struct {
		Pos         Pos
		Annotations Annotations
		Elem        Type
		Size        Expr
		Name        string
	}
)

// ParserState is one state of a parser.
type ParserState struct {
	Pos         Pos
	Annotations Annotations
	Name        string
	Stmts       []Stmt
	Transition  *Transition // nil means reject (p4 spec: missing transition is an error)
}

// Transition is "transition name;" or "transition select(...) {...}".
type Transition struct {
	Pos    Pos
	Next   string // direct transition
	Select []Expr // select keys
	Cases  []*SelectCase
}

// SelectCase is one "keyset : state;" of a select.
type SelectCase struct {
	Pos    Pos
	Keyset Expr // List for tuples, Default for default/_
	Next   string
}

// TableProp is one table property.
type TableProp struct {
	Pos         Pos
	Annotations Annotations
	Name        string
	Const       bool
	Keys        []*KeyElem    // key
	Actions     []*ActionRef  // actions
	Entries     []*TableEntry // entries
	Value       Expr          // other properties (default_action, size, counters, ...)
}

// KeyElem is "expr : match_kind @annotations;".
type KeyElem struct {
	Pos         Pos
	Annotations Annotations
	Expr        Expr
	MatchKind   string
}

// ActionRef is an element of a table's action list.
type ActionRef struct {
	Pos         Pos
	Annotations Annotations
	Name        string
	Args        []Arg
}

// TableEntry is a constant entry.
type TableEntry struct {
	Pos         Pos
	Annotations Annotations
	Priority    Expr // priority=N: or @priority(N), nil if absent
	// BMv2Priority: Priority is p4c's @priority(N) annotation, whose
	// smaller number wins, and the table's other entries rank by position.
	BMv2Priority bool
	Keyset       Expr
	Action       *ActionRef
}

func (d *ConstDecl) NodePos() Pos      { return d.Pos }
func (d *VarDecl) NodePos() Pos        { return d.Pos }
func (d *TypedefDecl) NodePos() Pos    { return d.Pos }
func (d *StructDecl) NodePos() Pos     { return d.Pos }
func (d *EnumDecl) NodePos() Pos       { return d.Pos }
func (d *ErrorDecl) NodePos() Pos      { return d.Pos }
func (d *ExternDecl) NodePos() Pos     { return d.Pos }
func (d *ExternFuncDecl) NodePos() Pos { return d.Proto.Pos }
func (d *FunctionDecl) NodePos() Pos   { return d.Proto.Pos }
func (d *BlockTypeDecl) NodePos() Pos  { return d.Pos }
func (d *ParserDecl) NodePos() Pos     { return d.Pos }
func (d *ControlDecl) NodePos() Pos    { return d.Pos }
func (d *ActionDecl) NodePos() Pos     { return d.Pos }
func (d *TableDecl) NodePos() Pos      { return d.Pos }
func (d *InstanceDecl) NodePos() Pos   { return d.Pos }
func (d *ValueSetDecl) NodePos() Pos   { return d.Pos }

func (d *ConstDecl) DeclName() string      { return d.Name }
func (d *VarDecl) DeclName() string        { return d.Name }
func (d *TypedefDecl) DeclName() string    { return d.Name }
func (d *StructDecl) DeclName() string     { return d.Name }
func (d *EnumDecl) DeclName() string       { return d.Name }
func (d *ErrorDecl) DeclName() string      { return d.Kind }
func (d *ExternDecl) DeclName() string     { return d.Name }
func (d *ExternFuncDecl) DeclName() string { return d.Proto.Name }
func (d *FunctionDecl) DeclName() string   { return d.Proto.Name }
func (d *BlockTypeDecl) DeclName() string  { return d.Name }
func (d *ParserDecl) DeclName() string     { return d.Name }
func (d *ControlDecl) DeclName() string    { return d.Name }
func (d *ActionDecl) DeclName() string     { return d.Name }
func (d *TableDecl) DeclName() string      { return d.Name }
func (d *InstanceDecl) DeclName() string   { return d.Name }
func (d *ValueSetDecl) DeclName() string   { return d.Name }

// Program is a parsed compilation unit.
type Program struct {
	Decls []Decl
}

func (p *Param) NodePos() Pos { return p.Pos }
