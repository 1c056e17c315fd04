package backend

import (
	"strings"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
)

// This file: how the pipeline's stages and tables are called, inlined or
// as global functions.

// ctlCall calls control block i of the pipeline, unless its body is empty
// (a call of an empty global function still costs a call and a lookup).
func (g *gen) ctlCall(blocks []sema.Entity, i int) {
	e := ctlCallExpr(blocks, i)
	if !strings.HasPrefix(e, "/*") {
		e += ";"
	}
	g.line("%s", e)
}

// ctlCallExpr is a control block's call, or a comment for an empty one
// (not called).
func ctlCallExpr(blocks []sema.Entity, i int) string {
	if c, ok := blocks[i].(*sema.Control); ok && c.Decl != nil && c.Decl.Body != nil && len(c.Decl.Body.Stmts) == 0 {
		return "/* " + comment(c.Name) + ": empty */"
	}
	return "ctl_" + ir.Sanitize(blocks[i].EntName()) + "(ctx)"
}

// stageAttr declares the parser, the controls and the deparser. Every call
// of a BPF function costs a call and a return (a return thunk on CPUs with
// return-stack mitigations), some 10 ns: they are inlined into the
// pipeline. Tables stay global functions (verified once each: inlined,
// the branches of successive tables multiply), and so do the stages of a
// replicating program (replicate.go calls them from its own functions).
func (g *gen) stageAttr() string {
	if g.replicates() {
		return "P4_FN"
	}
	return "P4_STAGE"
}

// tableAttr declares table functions: inlined too in a small, simple
// program, where the verifier's paths through successive tables stay few
// (two calls and returns are a good part of the cost of a small router).
func (g *gen) tableAttr() string {
	if g.inlineTables() {
		return "P4_STAGE"
	}
	return "P4_FN"
}

// inlineTables is InlinesTables of the program, decided once.
func (g *gen) inlineTables() bool {
	if g.fs != nil && g.fs.inlineTablesSet {
		return g.fs.inlineTables
	}
	ok := InlinesTables(g.p)
	g.fast()
	g.fs.inlineTablesSet, g.fs.inlineTables = true, ok
	return ok
}

// InlinesTables reports whether the generated code inlines the program's
// tables into the pipeline: at most 3 tables with 16 actions in all, none
// scanned, no parser loop, no replication and no stateful or hashing
// extern (what made real programs exceed the verifier's budget when
// everything was inlined). Otherwise each table is a global function,
// and applying it costs a call, a return and the state's lookup: the cost
// estimator prices that (p4.table.call).
func InlinesTables(p *ir.Program) bool {
	ok := len(p.Tables) <= 3 && len(p.Registers) == 0 && len(p.Meters) == 0 && !p.Replicates
	nact := 0
	for _, t := range p.Tables {
		if t.Kind == ir.KindScan {
			ok = false
		}
		nact += len(t.Actions)
	}
	if nact > 16 {
		ok = false // paths through a table: about two per action
	}
	for _, cr := range p.Info.Calls {
		if cr == nil {
			continue
		}
		switch cr.Kind {
		case sema.CallExternFunc:
			switch cr.Method {
			case "mark_to_drop", "verify", "verify_checksum", "update_checksum",
				"verify_checksum_with_payload", "update_checksum_with_payload", "static_assert":
			default:
				ok = false
			}
		case sema.CallExternMethod:
			if cr.Instance != nil {
				ok = false // counters, registers, meters, ...
			}
		}
	}
	for _, pr := range p.Info.Parsers {
		if _, loops := parserLoops(pr); len(pr.States) > 12 || len(loops) > 0 {
			ok = false
		}
	}
	return ok
}
