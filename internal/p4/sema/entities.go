package sema

import (
	"math/big"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Entity is what a name refers to.
type Entity interface{ EntName() string }

// VarKind tells where a variable lives.
type VarKind int

const (
	BlockParam  VarKind = iota // parameter of a parser/control (hdr, meta, standard_metadata, packet)
	ActionParam                // parameter of an action
	LocalVar                   // variable declared in a block, action or state
	FuncParam                  // parameter of a P4 function
)

// Var is a variable or parameter.
type Var struct {
	Name  string
	Type  Type
	Dir   string
	Kind  VarKind
	Pos   syntax.Pos
	Index int    // position in the parameter list
	Owner string // enclosing block name
	ID    int    // unique
}

// Const is a compile-time constant.
type Const struct {
	Name string
	Type Type
	Val  *big.Int
}

// Action is an action declaration.
type Action struct {
	Name       string // local name (after @name if given)
	FullName   string // fully qualified control-plane name (Control.action)
	Decl       *syntax.ActionDecl
	Control    *Control // nil for top-level actions
	Params     []*Var
	Annots     syntax.Annotations
	DataParams []*Var // directionless (control-plane) parameters
}

// KeyInfo is one key element of a table.
type KeyInfo struct {
	Elem      *syntax.KeyElem
	Name      string // control-plane name: @name or the expression text
	MatchKind string
	Type      Type
	Width     int
}

// TableAction is an element of a table's action list.
type TableAction struct {
	Action      *Action
	Args        []syntax.Arg
	DefaultOnly bool
	TableOnly   bool
}

// ActionCall is an action with constant arguments (default actions, entries).
type ActionCall struct {
	Action *Action
	Args   []*big.Int // one per data parameter
	Pos    syntax.Pos
	// DirArgs are directional arguments when written (they must repeat the
	// table's action list, which binds them).
	DirArgs []syntax.Expr
}

// Entry is a const table entry.
type Entry struct {
	Pos      syntax.Pos
	Keys     []syntax.Expr // one per key element
	Action   *ActionCall
	Priority int64 // 0 if not given
}

// Table is a table declaration.
type Table struct {
	Name          string // local name
	FullName      string
	Decl          *syntax.TableDecl
	Control       *Control
	Keys          []*KeyInfo
	Actions       []*TableAction
	Default       *ActionCall
	ConstDefault  bool
	Size          int // 0 when not given
	DirectCounter *Instance
	DirectMeter   *Instance // meters = dm; (a direct_meter)
	// SupportTimeout: support_timeout = true; entries may have an idle
	// timeout (the data path records their last hit).
	SupportTimeout bool
	// Implementation: implementation = an action_profile or
	// action_selector (actprof.go); entries then name members or groups.
	Implementation *Instance
	// EmptyGroupAction: PSA's psa_empty_group_action, the action a hit
	// on a reference to a group without members runs (nil: the miss).
	EmptyGroupAction *ActionCall
	Entries          []*Entry
	EntriesConst     bool
	Annots           syntax.Annotations
}

// Instance is an extern instance (counter, direct_counter, register, ...).
type Instance struct {
	Name     string
	FullName string
	Decl     *syntax.InstanceDecl
	Extern   *syntax.ExternDecl
	TypeArgs []Type
	Args     []*big.Int // constant constructor arguments (enum members as their index)
	Control  *Control
	Annots   syntax.Annotations
}

// Func is an extern function or P4 function (possibly overloaded).
type Func struct {
	Name   string
	Protos []*syntax.FuncProto
	Decls  []*syntax.FunctionDecl
}

// Function is a P4 function (declared at the top level).
type Function struct {
	Name   string
	Decl   *syntax.FunctionDecl
	Params []*Var
	Ret    Type
}

func (f *Function) EntName() string { return f.Name }

// TypeName is a name of a type used where an expression is expected (enum members, error).
type TypeName struct {
	Name string
	Type Type
}

// Control is a control declaration.
type Control struct {
	Name   string
	Decl   *syntax.ControlDecl
	Params []*Var
	Locals []Entity
	// Ctor are the constructor parameters, CtorArgs the values its one
	// instantiation gives them (ctor.go).
	Ctor     []*Var
	CtorArgs []syntax.Expr
}

// Parser is a parser declaration.
type Parser struct {
	Name   string
	Decl   *syntax.ParserDecl
	Params []*Var
	Locals []Entity
	// Ctor are the constructor parameters; CtorArgs their values as the
	// main package's parser (a sub-parser's are SubParser.Args).
	Ctor     []*Var
	CtorArgs []syntax.Expr
	States   map[string]*State
	Order    []*State
}

// State is a parser state.
type State struct {
	Name string
	Decl *syntax.ParserState
}

// ValueSet is a parser value_set.
type ValueSet struct {
	Name     string
	FullName string
	Decl     *syntax.ValueSetDecl
	Elem     Type
	Size     int
}

// SubControl is a control instantiated inside another control; its
// tables, actions and externs are named after the instance
// (Parent.instance.table), as p4c names them.
type SubControl struct {
	Name    string
	Decl    *syntax.InstanceDecl
	Control *Control // the instantiated control
	Parent  *Control
}

func (s *SubControl) EntName() string { return s.Name }

// BlockType is a parser/control/package type declaration.
type BlockType struct {
	Decl *syntax.BlockTypeDecl
}

func (v *Var) EntName() string       { return v.Name }
func (c *Const) EntName() string     { return c.Name }
func (a *Action) EntName() string    { return a.Name }
func (t *Table) EntName() string     { return t.Name }
func (i *Instance) EntName() string  { return i.Name }
func (f *Func) EntName() string      { return f.Name }
func (t *TypeName) EntName() string  { return t.Name }
func (c *Control) EntName() string   { return c.Name }
func (p *Parser) EntName() string    { return p.Name }
func (s *State) EntName() string     { return s.Name }
func (v *ValueSet) EntName() string  { return v.Name }
func (b *BlockType) EntName() string { return b.Decl.Name }

// MemberKind classifies a member access.
type MemberKind int

const (
	FieldAccess MemberKind = iota // struct/header field
	EnumMember                    // Enum.member or error.member
	MethodRef                     // extern method, header method, table apply
	ApplyField                    // t.apply().hit / .miss / .action_run
	StackMember                   // hs.next / hs.last / hs.lastIndex / hs.size (Name)
)

// MemberRef describes a resolved member expression.
type MemberRef struct {
	Kind  MemberKind
	Field *Field
	Index int // enum member index / error id
	Value *big.Int
	Name  string // StackMember: next, last, lastIndex, size
}

// CallKind classifies a call.
type CallKind int

const (
	CallAction       CallKind = iota // direct action call
	CallTableApply                   // t.apply()
	CallExternMethod                 // inst.method(...) incl. packet.extract/emit
	CallExternFunc                   // f(...) extern function
	CallHeaderMethod                 // h.isValid() / setValid() / setInvalid(); hs.push_front(n) / pop_front(n) (Count)
	CallBlockApply                   // sub-parser/sub-control apply
	CallFunction                     // P4 function
)

// CallRef describes a resolved call.
type CallRef struct {
	Kind      CallKind
	Action    *Action
	Table     *Table
	Method    string // method or function name
	Proto     *syntax.FuncProto
	Instance  *Instance // extern instance receiver, if any
	Recv      syntax.Expr
	Func      *Func
	Sub       *SubControl // CallBlockApply of a control
	SubParser *SubParser  // CallBlockApply of a parser (subparser.go)
	Count     int         // push_front / pop_front
	Function  *Function   // CallFunction
}

// Package is the resolved main instantiation.
type Package struct {
	Arch string // "v1model" or "psa"
	Name string
	// Blocks are the parsers and controls in package parameter order:
	// *Parser or *Control. PSA: the ingress pipeline's three, then the
	// egress pipeline's (psa.go).
	Blocks []Entity
}
