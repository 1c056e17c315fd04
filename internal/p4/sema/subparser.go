package sema

// Sub-parsers (P4-16 13.9): "Sub() name;" inside a parser, applied in a
// state with name.apply(packet, ...). The backend inlines the sub-parser's
// states at each apply: its accept continues the caller's state, its
// reject rejects the packet.

import "github.com/edgenf/edgenf/internal/p4/syntax"

// SubParser is a parser instantiated inside another parser.
type SubParser struct {
	Name   string
	Decl   *syntax.InstanceDecl
	Parser *Parser // the instantiated parser
	Parent *Parser
	Args   []syntax.Expr // constructor arguments (ctor.go)
}

func (s *SubParser) EntName() string { return s.Name }

// subParser checks "Sub() name;" inside a parser.
func (c *checker) subParser(x *syntax.InstanceDecl, y *BlockT) Entity {
	callee, _ := c.global.lookup(y.Name).(*Parser)
	if callee == nil {
		c.errorf(x.Pos, "%s is not a parser; a parser can instantiate parsers only", y.Name)
		return nil
	}
	if callee == c.parser {
		c.errorf(x.Pos, "parser %s cannot instantiate itself", callee.Name)
		return nil
	}
	for _, l := range callee.Locals {
		if _, ok := l.(*ValueSet); ok && c.subParsers[callee] {
			// p4c names a value_set after its instance: one per instance
			c.unsupported(x.Pos, "instantiating parser "+callee.Name+", which declares a value_set, more than once")
			return nil
		}
	}
	if c.subParsers == nil {
		c.subParsers = map[*Parser]bool{}
	}
	c.subParsers[callee] = true
	sub := &SubParser{Name: x.Name, Decl: x, Parser: callee, Parent: c.parser,
		Args: c.ctorArgs(x.Args, callee.Ctor, callee.Name, x.Pos)}
	c.declare(x.Name, sub, x.Pos)
	return sub
}

// applySubParser checks name.apply(args) of a sub-parser: in a parser
// state, its packet_in first, then the parser's other parameters.
func (c *checker) applySubParser(x *syntax.Call, sub *SubParser) Type {
	c.info.Calls[x] = &CallRef{Kind: CallBlockApply, SubParser: sub}
	if c.parser == nil {
		c.errorf(x.Pos, "a sub-parser can only be applied in a parser state")
		return &Void{}
	}
	params := sub.Parser.Params
	if len(x.Args) != len(params) {
		c.errorf(x.Pos, "%s.apply takes %d arguments, got %d", sub.Name, len(params), len(x.Args))
		return &Void{}
	}
	for i, a := range x.Args {
		if a.Value == nil {
			c.errorf(x.Pos, "missing argument %d", i+1)
			continue
		}
		p := params[i]
		if et, ok := p.Type.(*ExternT); ok {
			c.packetArg(a.Value, i, sub.Name, et)
			continue
		}
		at := c.expr(a.Value, p.Type)
		c.assignable(p.Type, at, a.Value)
		if p.Dir == "out" || p.Dir == "inout" {
			c.lvalue(a.Value)
		}
	}
	return &Void{}
}

// packetArg checks argument i of name.apply for a parameter of extern type
// et (packet_in): an instance of that extern.
func (c *checker) packetArg(e syntax.Expr, i int, name string, et *ExternT) {
	at := c.expr(e, nil)
	if at2, ok := at.(*ExternT); !ok || at2.Decl != et.Decl {
		c.errorf(e.NodePos(), "argument %d of %s.apply must be a %s, got %s", i+1, name, et.Decl.Name, at)
	}
}
