package sema

import "github.com/edgenf/edgenf/internal/p4/syntax"

// withTypeArgs checks a call of a generic extern function with explicit
// type arguments: the type parameters are bound to them (resolved in the
// caller's scope), so that digest<learn_t>(1, {a, b}) checks the list
// against learn_t; such a list argument is then typed as learn_t.
func (c *checker) withTypeArgs(x *syntax.Call, proto *syntax.FuncProto, f func() Type) Type {
	tps := proto.TypeParams
	types := make([]Type, len(x.TypeArgs))
	for i, a := range x.TypeArgs {
		types[i] = c.resolveType(a)
	}
	c.push()
	for i, n := range tps {
		if types[i] == nil {
			c.sc.names[n] = &TypeName{Name: n, Type: &TypeVar{Name: n}}
			continue
		}
		c.sc.names[n] = &TypeName{Name: n, Type: types[i]}
	}
	ret := f()
	c.pop()
	for i, p := range proto.Params {
		nt, ok := p.Type.(*syntax.NamedType)
		if !ok || i >= len(x.Args) || x.Args[i].Value == nil {
			continue
		}
		if _, isList := x.Args[i].Value.(*syntax.List); !isList {
			continue
		}
		for j, n := range tps {
			if n == nt.Name && types[j] != nil {
				if _, ok := types[j].(*Struct); ok {
					c.info.Types[x.Args[i].Value] = types[j]
				}
			}
		}
	}
	return ret
}
