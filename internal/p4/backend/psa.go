package backend

import (
	"sort"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// PSA (psa.p4): PSA_Switch(IngressPipeline(parser, ingress, deparser),
// PacketReplicationEngine(), EgressPipeline(parser, egress, deparser),
// BufferingQueueingEngine()). Each pipeline has its own headers and user
// metadata: the ingress deparser writes the packet, the egress parser
// parses it again. What crosses from one block to the next is the
// architecture's metadata (psa_*_metadata_t) and the user's bridged
// structs (normal_meta from the ingress deparser to the egress parser,
// resubmit_meta, recirculate_meta and the clone metadata), each one
// storage in the per-packet state that both ends bind to.
type psa struct{}

// psaPortCPU is psa.p4's PSA_PORT_CPU.
const psaPortCPU = 0xfffffffd

// psaSM is the pipeline's own metadata, in the place of v1model's
// standard_metadata (s->sm): what the parser (parser_error), the checksum
// and meter externs (packet_length) and the shared pipeline start write.
// Not visible to the program: the PSA blocks read their psa_*_metadata_t.
const psaSM = `/* PSA: the pipeline's own metadata (parser error, packet length), which the
 * pipeline copies into the blocks' psa_*_metadata_t (psa.go) */
struct p4_psa_sm {
	__u32 f_ingress_port;
	__u32 f_packet_length;
	__u32 f_parser_error;
	__u32 f_checksum_error;
	__u64 f_ingress_global_timestamp;
	__u8 f_priority;
	/* the replication runtime's view of a pass and a copy (psa_replicate.go) */
	__u32 f_instance_type;
	__u32 f_egress_spec;
	__u32 f_egress_port;
	__u32 f_egress_rid;
	__u32 f_mcast_grp;
	__u64 f_egress_global_timestamp;
};

`

func (psa) bind(g *gen, blocks []sema.Entity) bool {
	ip := blocks[sema.PSAIngressParser].(*sema.Parser)
	ig := blocks[sema.PSAIngress].(*sema.Control)
	id := blocks[sema.PSAIngressDeparser].(*sema.Control)
	ep := blocks[sema.PSAEgressParser].(*sema.Parser)
	eg := blocks[sema.PSAEgress].(*sema.Control)
	ed := blocks[sema.PSAEgressDeparser].(*sema.Control)
	want := []struct {
		name string
		n    int
		pos  syntax.Pos
		got  int
	}{
		{ip.Name, 6, ip.Decl.Pos, len(ip.Params)}, {ig.Name, 4, ig.Decl.Pos, len(ig.Params)}, {id.Name, 7, id.Decl.Pos, len(id.Params)},
		{ep.Name, 7, ep.Decl.Pos, len(ep.Params)}, {eg.Name, 4, eg.Decl.Pos, len(eg.Params)}, {ed.Name, 7, ed.Decl.Pos, len(ed.Params)},
	}
	for _, w := range want {
		if w.got != w.n {
			g.errorf(w.pos, "%s has %d parameters; its PSA block takes %d", w.name, w.got, w.n)
			return false
		}
	}
	ih, ok1 := ip.Params[1].Type.(*sema.Struct)
	im, ok2 := ip.Params[2].Type.(*sema.Struct)
	eh, ok3 := ep.Params[1].Type.(*sema.Struct)
	em, ok4 := ep.Params[2].Type.(*sema.Struct)
	if !ok1 || !ok2 || !ok3 || !ok4 || ih.Kind != "struct" || im.Kind != "struct" || eh.Kind != "struct" || em.Kind != "struct" {
		g.errorf(ip.Decl.Pos, "the headers and metadata parameters of the PSA parsers must be structs")
		return false
	}
	g.hTy, g.mTy = ih, im
	pos := ip.Decl.Pos
	g.types.WriteString(psaSM)
	g.state = append(g.state, g.decl(ih, "hdr", pos), g.decl(im, "meta", pos), "struct p4_psa_sm sm", "__u32 off", "__u32 tr_hit", "__u32 tr_action")
	// The egress headers: the ingress ones' storage when the type is the
	// same (the egress parser starts from all invalid), else their own.
	ehdr := "s->hdr"
	if eh != ih {
		ehdr = "s->ehdr"
		g.state = append(g.state, g.decl(eh, "ehdr", ep.Decl.Pos))
	}
	g.state = append(g.state, g.decl(em, "emeta", ep.Decl.Pos))
	// storage for each architecture or bridged struct, by its name in
	// the state; the first parameter bound to it declares it
	declared := map[string]bool{}
	bind := func(v *sema.Var, name string) {
		if !declared[name] {
			declared[name] = true
			g.state = append(g.state, g.decl(v.Type, name, v.Pos))
		}
		g.lv[v] = "s->" + name
	}
	p := func(b []*sema.Var, names ...string) {
		for i, n := range names {
			switch {
			case n == "":
			case n[0] == '$': // headers and user metadata: declared above
				g.lv[b[i]] = n[1:]
			default:
				bind(b[i], n)
			}
		}
	}
	p(ip.Params, "", "$s->hdr", "$s->meta", "psa_ig_pin", "psa_resub", "psa_recirc")
	p(ig.Params, "$s->hdr", "$s->meta", "psa_ig_in", "psa_ig_out")
	p(id.Params, "", "psa_ci2e", "psa_resub", "psa_nm", "$s->hdr", "$s->meta", "psa_ig_out")
	p(ep.Params, "", "$"+ehdr, "$s->emeta", "psa_eg_pin", "psa_nm", "psa_ci2e", "psa_ce2e")
	p(eg.Params, "$"+ehdr, "$s->emeta", "psa_eg_in", "psa_eg_out")
	p(ed.Params, "", "psa_ce2e", "psa_recirc", "$"+ehdr, "$s->emeta", "psa_eg_out", "psa_eg_dp")
	if !psaCloneToCPU(g) {
		return false
	}
	g.sizeHeaders(ih)
	g.collectHeaders(ih)
	if eh != ih {
		g.sizeHeaders(eh)
		g.collectHeaders(eh)
	}
	return true
}

func (psa) stages(blocks []sema.Entity) ([]parserStage, map[*sema.Control]string) {
	if psaEgressEmpty(blocks) { // not run (pipeline)
		return []parserStage{{blocks[sema.PSAIngressParser].(*sema.Parser), "p4_parser_ig"}},
			map[*sema.Control]string{blocks[sema.PSAIngressDeparser].(*sema.Control): "p4_deparse_ig"}
	}
	return []parserStage{
			{blocks[sema.PSAIngressParser].(*sema.Parser), "p4_parser_ig"},
			{blocks[sema.PSAEgressParser].(*sema.Parser), "p4_parser_eg"},
		}, map[*sema.Control]string{
			blocks[sema.PSAIngressDeparser].(*sema.Control): "p4_deparse_ig",
			blocks[sema.PSAEgressDeparser].(*sema.Control):  "p4_deparse_eg",
		}
}

// pipeline: the ingress pipeline, the packet's fate from
// psa_ingress_output_metadata_t (drop, the default, or one port), then the
// egress pipeline on the deparsed packet and psa_egress_output_metadata_t.
func (a psa) pipeline(g *gen, blocks []sema.Entity) {
	ip := blocks[sema.PSAIngressParser].(*sema.Parser)
	ep := blocks[sema.PSAEgressParser].(*sema.Parser)
	path := func(member string) int { return psaPacketPath(ip.Params[3].Type, member) }
	if g.replicates() {
		a.replPipeline(g, blocks) // psa_replicate.go
		return
	}
	g.line("/* PSA_Switch: ingress parser, ingress, ingress deparser; egress parser, egress, egress deparser. */")
	g.pipelineStart("__u32 port;", "")
	// ingress: the architecture's input metadata; drop unless the program
	// sends the packet somewhere (psa.p4: ostd.drop starts true)
	g.line("s->psa_ig_pin.f_ingress_port = md->in_port;")
	g.line("s->psa_ig_in.f_ingress_port = md->in_port;")
	if p := path("NORMAL"); p > 0 {
		g.line("s->psa_ig_pin.f_packet_path = s->psa_ig_in.f_packet_path = %d; /* NORMAL */", p)
	}
	if g.usesField("ingress_timestamp") {
		g.line("s->psa_ig_in.f_ingress_timestamp = bpf_ktime_get_ns();")
	}
	g.line("s->psa_ig_out.f_drop = 1;")
	g.line("p4_parser_ig(ctx);")
	g.line("s->psa_ig_in.f_parser_error = s->sm.f_parser_error;")
	g.ctlCall(blocks, sema.PSAIngress) // not for an empty control (stages.go)
	g.line("if (p4_deparse_ig(ctx))")
	g.line("\treturn enf_drop(ctx, md);")
	g.line("if (s->psa_ig_out.f_drop)")
	g.line("\treturn enf_drop(ctx, md);")
	// a program without multicast, clones, resubmit or recirculate
	g.line("port = s->psa_ig_out.f_egress_port;")
	if psaEgressEmpty(blocks) {
		// an egress pipeline that parses, does and emits nothing leaves
		// the packet as the ingress deparser made it: not run
		g.line("/* egress pipeline: parses, does and emits nothing */")
		g.pipelineTail()
		a.send(g)
		return
	}
	// egress: on the packet as the ingress deparser left it
	g.line("s->psa_eg_pin.f_egress_port = s->psa_eg_in.f_egress_port = s->psa_eg_dp.f_egress_port = port;")
	if p := path("NORMAL_UNICAST"); p > 0 {
		g.line("s->psa_eg_pin.f_packet_path = s->psa_eg_in.f_packet_path = %d; /* NORMAL_UNICAST */", p)
	}
	g.line("s->psa_eg_in.f_class_of_service = s->psa_ig_out.f_class_of_service;")
	if g.usesField("egress_timestamp") {
		g.line("s->psa_eg_in.f_egress_timestamp = bpf_ktime_get_ns();")
	}
	if ep.Params[1].Type == ip.Params[1].Type {
		g.line("__builtin_memset(&s->hdr, 0, sizeof(s->hdr)); /* the egress parser's headers start invalid */")
	}
	g.line("s->sm.f_parser_error = 0;")
	g.line("p4_parser_eg(ctx);")
	g.line("s->psa_eg_in.f_parser_error = s->sm.f_parser_error;")
	g.ctlCall(blocks, sema.PSAEgress) // not for an empty control (stages.go)
	g.line("if (s->psa_eg_out.f_drop)")
	g.line("\treturn enf_drop(ctx, md);")
	g.line("if (p4_deparse_eg(ctx))")
	g.line("\treturn enf_drop(ctx, md);")
	g.pipelineTail()
	a.send(g)
}

// send closes the pipeline: PSA_PORT_CPU is the slow path.
func (psa) send(g *gen) {
	g.line("if (port == %#x) /* PSA_PORT_CPU */", psaPortCPU)
	g.line("\tport = P4_CPU_PORT;")
	g.pipelineSend()
}

// psaEgressEmpty reports whether the egress pipeline is a no-op: its
// parser goes from start to accept with no statement, its control and
// its deparser have empty bodies and no declarations.
func psaEgressEmpty(blocks []sema.Entity) bool {
	ep := blocks[sema.PSAEgressParser].(*sema.Parser).Decl
	if len(ep.Locals) > 0 || len(ep.States) != 1 || len(ep.States[0].Stmts) > 0 ||
		ep.States[0].Transition == nil || ep.States[0].Transition.Next != "accept" || len(ep.States[0].Transition.Select) > 0 {
		return false
	}
	for _, i := range []int{sema.PSAEgress, sema.PSAEgressDeparser} {
		c := blocks[i].(*sema.Control).Decl
		if len(c.Locals) > 0 || c.Body == nil || len(c.Body.Stmts) > 0 {
			return false
		}
	}
	return true
}

// psaPacketPath is the C value of PSA_PacketPath_t.member, the type of
// field packet_path of psa.p4's struct st; -1 if st has none.
func psaPacketPath(st sema.Type, member string) int {
	if st, ok := st.(*sema.Struct); ok {
		for _, f := range st.Fields {
			e, ok := f.Type.(*sema.Enum)
			if !ok || f.Name != "packet_path" {
				continue
			}
			for i, m := range e.Members {
				if m == member {
					if e.Values != nil {
						return int(e.Values[i].Int64())
					}
					return i
				}
			}
		}
	}
	return -1
}

// psaCloneToCPU refuses, with an error at each use, the clone session
// PSA_CLONE_SESSION_TO_CPU (0): edgenf's clone sessions are the control
// plane's (mirroring_add), and 0 is no session. A clone to the CPU is a
// session to port PSA_PORT_CPU's punt port, configured as any other.
func psaCloneToCPU(g *gen) bool {
	n := len(g.errs)
	var sites []syntax.Pos
	for id, e := range g.info.Uses {
		if c, ok := e.(*sema.Const); ok && c.Name == "PSA_CLONE_SESSION_TO_CPU" && id.Pos.File != "<psa.p4>" {
			sites = append(sites, id.Pos)
		}
	}
	sort.Slice(sites, func(i, j int) bool {
		a, b := sites[i], sites[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	for _, p := range sites {
		g.unsupported(p, "PSA_CLONE_SESSION_TO_CPU: clone session 0 is no session in edgenf; clone to a session the control plane points at the CPU port")
	}
	return len(g.errs) == n
}

// psaAction generates psa.p4's send_to_port, ingress_drop and egress_drop
// as what they do to their arguments' fields (psa.p4 defines them so),
// without copying the metadata struct in and out; false for any other
// action.
func (g *gen) psaAction(a *sema.Action, dir []syntax.Expr) bool {
	if a.Decl == nil || a.Decl.Pos.File != "<psa.p4>" || len(dir) == 0 {
		return false
	}
	switch a.Name {
	case "send_to_port":
		if len(dir) != 2 {
			return false
		}
		g.line("__u64 pv = %s; /* send_to_port */", g.rv(dir[1]))
		m := g.lval(dir[0])
		g.line("%s.f_drop = 0;", m)
		g.line("%s.f_multicast_group = 0;", m)
		g.line("%s.f_egress_port = pv;", m)
	case "ingress_drop", "egress_drop":
		g.line("%s.f_drop = 1; /* %s */", g.lval(dir[0]), a.Name)
	default:
		return false
	}
	return true
}

// psaInlined reports whether action a is one psaAction generates in place
// (no C function for it).
func psaInlined(a *sema.Action) bool {
	return a.Decl != nil && a.Decl.Pos.File == "<psa.p4>" && (a.Name == "send_to_port" || a.Name == "ingress_drop" || a.Name == "egress_drop")
}
