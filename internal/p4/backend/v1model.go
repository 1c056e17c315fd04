package backend

import (
	"github.com/edgenf/edgenf/internal/p4/sema"
)

// v1model: V1Switch(Parser, VerifyChecksum, Ingress, Egress,
// ComputeChecksum, Deparser). One headers struct, one metadata struct and
// standard_metadata run through all six blocks.
type v1model struct{}

func (v1model) bind(g *gen, blocks []sema.Entity) bool {
	parser := blocks[0].(*sema.Parser)
	// Parser(packet_in, out H, inout M, inout standard_metadata_t)
	if len(parser.Params) != 4 {
		g.errorf(parser.Decl.Pos, "parser %s must have 4 parameters for V1Switch", parser.Name)
		return false
	}
	h, ok1 := parser.Params[1].Type.(*sema.Struct)
	m, ok2 := parser.Params[2].Type.(*sema.Struct)
	if !ok1 || !ok2 || h.Kind != "struct" || m.Kind != "struct" {
		g.errorf(parser.Decl.Pos, "the headers and metadata parameters must be structs")
		return false
	}
	g.hTy, g.mTy = h, m
	sm := g.info.StandardMetadata
	g.state = append(g.state, g.decl(h, "hdr", parser.Decl.Pos), g.decl(m, "meta", parser.Decl.Pos), g.decl(sm, "sm", parser.Decl.Pos), "__u32 off", "__u32 tr_hit", "__u32 tr_action")
	bind := func(v *sema.Var, c string) { g.lv[v] = c }
	bind(parser.Params[1], "s->hdr")
	bind(parser.Params[2], "s->meta")
	bind(parser.Params[3], "s->sm")
	kinds := []string{"parser", "verify", "ingress", "egress", "compute", "deparser"}
	for i, b := range blocks[1:] {
		c := b.(*sema.Control)
		var want []string
		switch kinds[i+1] {
		case "verify", "compute":
			want = []string{"s->hdr", "s->meta"}
		case "ingress", "egress":
			want = []string{"s->hdr", "s->meta", "s->sm"}
		case "deparser":
			want = []string{"", "s->hdr"}
		}
		if len(c.Params) != len(want) {
			g.errorf(c.Decl.Pos, "control %s has %d parameters; the V1Switch %s block takes %d", c.Name, len(c.Params), kinds[i+1], len(want))
			return false
		}
		for j, v := range c.Params {
			if want[j] != "" {
				bind(v, want[j])
			}
		}
	}
	g.sizeHeaders(h)
	g.collectHeaders(h)
	return true
}

func (v1model) stages(blocks []sema.Entity) ([]parserStage, map[*sema.Control]string) {
	return []parserStage{{blocks[0].(*sema.Parser), "p4_parser"}},
		map[*sema.Control]string{blocks[len(blocks)-1].(*sema.Control): "p4_deparse"}
}

func (v1model) pipeline(g *gen, blocks []sema.Entity) {
	if g.replicates() {
		g.replPipeline(blocks) // replicate.go
		return
	}
	g.line("/* V1Switch: Parser, VerifyChecksum, Ingress, Egress, ComputeChecksum, Deparser. */")
	g.pipelineStart("__u32 port;", "")
	g.line("p4_parser(ctx);")
	g.ctlCall(blocks, 1) // not for an empty control (stages.go)
	g.ctlCall(blocks, 2) // not for an empty control (stages.go)
	g.line("if (s->sm.f_egress_spec == P4_DROP_PORT)")
	g.line("\treturn enf_drop(ctx, md);")
	g.line("s->sm.f_egress_port = s->sm.f_egress_spec;")
	if g.usesField("egress_global_timestamp") {
		g.line("s->sm.f_egress_global_timestamp = (bpf_ktime_get_ns() / 1000) & %s;", mask(48))
	}
	g.ctlCall(blocks, 3) // not for an empty control (stages.go)
	g.line("if (s->sm.f_egress_spec == P4_DROP_PORT)")
	g.line("\treturn enf_drop(ctx, md);")
	g.ctlCall(blocks, 4) // not for an empty control (stages.go)
	g.line("if (p4_deparse(ctx))")
	g.line("\treturn enf_drop(ctx, md);")
	g.pipelineTail()
	g.line("port = s->sm.f_egress_port;")
	g.pipelineSend()
}
