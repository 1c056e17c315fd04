package sema

// Action profiles and action selectors (v1model action_profile and
// action_selector): a table whose implementation property names one holds
// no actions of its own; its entries point to a member (an action with its
// data, shared) or to a group of members, one of which a hash over the
// table's selector key fields picks per packet.

import (
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// IsActionProfile reports whether in is an action profile or selector.
func IsActionProfile(in *Instance) bool {
	if in == nil {
		return false
	}
	switch in.Extern.Name {
	case "action_profile", "action_selector", "ActionProfile", "ActionSelector":
		return true
	}
	return false
}

// IsActionSelector reports whether in is an action selector.
func IsActionSelector(in *Instance) bool {
	return in != nil && (in.Extern.Name == "action_selector" || in.Extern.Name == "ActionSelector")
}

// tableImplementation resolves implementation = p: the name of an
// action_profile or action_selector instance, or one constructed in place
// (named by the property's @name, else after the table, as p4c does).
func (c *checker) tableImplementation(p *syntax.TableProp, t *Table) *Instance {
	switch x := p.Value.(type) {
	case *syntax.Ident:
		inst, _ := c.sc.lookup(x.Name).(*Instance)
		if !IsActionProfile(inst) {
			c.errorf(x.Pos, "implementation must be an action_profile or action_selector instance; %s is not one", x.Name)
			return nil
		}
		c.info.Uses[x] = inst
		return inst
	case *syntax.Call:
		fn, ok := x.Fn.(*syntax.Ident)
		if !ok || (fn.Name != "action_profile" && fn.Name != "action_selector") {
			break
		}
		name := t.Name
		if n, ok := p.Annotations.String("name"); ok {
			name = n
		}
		decl := &syntax.InstanceDecl{Pos: x.Pos, Annotations: p.Annotations, Type: &syntax.NamedType{Pos: fn.Pos, Name: fn.Name}, Args: x.Args, Name: "$implementation." + t.Name}
		inst, _ := c.instanceDecl(decl, "").(*Instance)
		if inst == nil {
			return nil
		}
		owner := ""
		if c.control != nil {
			owner = c.control.Name
		}
		inst.Name = name
		inst.FullName = fullName(owner, name, nil)
		if n, ok := p.Annotations.String("name"); ok && len(n) > 0 && n[0] == '.' {
			inst.FullName = n[1:]
		}
		return inst
	}
	c.errorf(p.Value.NodePos(), "implementation must be an action_profile or action_selector (an instance's name or action_selector(algorithm, size, width))")
	return nil
}

// checkImplementation checks what an implementation implies for the
// table's keys and entries.
func (c *checker) checkImplementation(t *Table, entries *syntax.TableProp) {
	nsel := 0
	for _, k := range t.Keys {
		if k.MatchKind == "selector" {
			nsel++
			if !IsActionSelector(t.Implementation) {
				c.errorf(k.Elem.Pos, "selector key %s: the table's implementation must be an action_selector", k.Name)
			}
		}
	}
	if t.Implementation == nil {
		return
	}
	if IsActionSelector(t.Implementation) && nsel == 0 {
		c.errorf(t.Decl.Pos, "table %s is implemented by action selector %s but has no selector key (key = { field : selector; })", t.Name, t.Implementation.Name)
	}
	if entries != nil {
		c.unsupported(entries.Pos, "entries in a table implemented by an action profile or selector")
	}
}

// emptyGroupAction checks PSA's psa_empty_group_action = a(args): the
// table must be implemented by an action selector, and the action, from
// its actions list, takes constant arguments as a default action does.
func (c *checker) emptyGroupAction(t *Table, p *syntax.TableProp, inList func(*ActionCall) bool) *ActionCall {
	if !IsActionSelector(t.Implementation) {
		c.errorf(p.Pos, "psa_empty_group_action: table %s is not implemented by an ActionSelector (psa_implementation = an ActionSelector instance)", t.Name)
		return nil
	}
	ac := c.actionCall(p.Value)
	if ac != nil && !inList(ac) {
		c.errorf(p.Value.NodePos(), "psa_empty_group_action %s is not in the table's actions list", ac.Action.Name)
		return nil
	}
	return ac
}
