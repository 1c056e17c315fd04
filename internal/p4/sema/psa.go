package sema

import "github.com/edgenf/edgenf/internal/p4/syntax"

// The PSA architecture's main package (psa.p4):
//
//	IngressPipeline(IngressParserImpl(), ingress(), IngressDeparserImpl()) ip;
//	EgressPipeline(EgressParserImpl(), egress(), EgressDeparserImpl()) ep;
//	PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
//
// The pipelines are packages of their own, declared by name at the top
// level or constructed in place as PSA_Switch's arguments. Package.Blocks
// flattens them: ingress parser, ingress, ingress deparser, egress parser,
// egress, egress deparser (PSABlocks).

// PSA block indexes in Package.Blocks.
const (
	PSAIngressParser = iota
	PSAIngress
	PSAIngressDeparser
	PSAEgressParser
	PSAEgress
	PSAEgressDeparser
	PSABlocks
)

// pipelineInst is a PSA pipeline package instantiated by name.
type pipelineInst struct {
	decl *syntax.InstanceDecl
	bt   *BlockT
	used bool
}

func pipelinePackage(name string) bool { return name == "IngressPipeline" || name == "EgressPipeline" }

// pipelineDecl records a named pipeline for main to take.
func (c *checker) pipelineDecl(x *syntax.InstanceDecl, bt *BlockT) {
	if _, dup := c.pipelines[x.Name]; dup {
		c.errorf(x.Pos, "%s is already declared", x.Name)
		return
	}
	c.pipelines[x.Name] = &pipelineInst{decl: x, bt: bt}
}

// psaMain binds PSA_Switch(ingress pipeline, PacketReplicationEngine(),
// egress pipeline, BufferingQueueingEngine()).
func (c *checker) psaMain(pkg *Package, x *syntax.InstanceDecl, bt *BlockT) bool {
	if len(x.Args) != 4 {
		c.errorf(x.Pos, "PSA_Switch takes 4 arguments (ingress pipeline, PacketReplicationEngine(), egress pipeline, BufferingQueueingEngine()), got %d", len(x.Args))
		return false
	}
	ok := c.psaPipeline(pkg, x.Args[0].Value, "IngressPipeline") &&
		c.psaEngine(x.Args[1].Value, "PacketReplicationEngine") &&
		c.psaPipeline(pkg, x.Args[2].Value, "EgressPipeline") &&
		c.psaEngine(x.Args[3].Value, "BufferingQueueingEngine")
	return ok && len(pkg.Blocks) == PSABlocks
}

// psaPipeline binds one pipeline argument: the name of a pipeline declared
// before, or IngressPipeline(...) / EgressPipeline(...) in place.
func (c *checker) psaPipeline(pkg *Package, e syntax.Expr, want string) bool {
	switch v := e.(type) {
	case *syntax.Ident:
		pl := c.pipelines[v.Name]
		if pl == nil {
			c.errorf(v.Pos, "%s is not a pipeline declared before main (e.g. %s(...) %s;)", v.Name, want, v.Name)
			return false
		}
		if pl.bt.Name != want {
			c.errorf(v.Pos, "%s is an %s; PSA_Switch expects an %s here", v.Name, pl.bt.Name, want)
			return false
		}
		if pl.used {
			c.errorf(v.Pos, "pipeline %s is used twice", v.Name)
			return false
		}
		pl.used = true
		return c.packageBlocks(pkg, pl.decl.Pos, pl.decl.Args, pl.bt)
	case *syntax.Call:
		id, _ := v.Fn.(*syntax.Ident)
		if id == nil || id.Name != want {
			c.errorf(e.NodePos(), "PSA_Switch expects an %s here", want)
			return false
		}
		var bt *BlockT
		if tn, ok := c.global.lookup(want).(*TypeName); ok {
			bt, _ = tn.Type.(*BlockT)
		}
		if bt == nil {
			c.errorf(e.NodePos(), "%s is not declared (#include <psa.p4>)", want)
			return false
		}
		return c.packageBlocks(pkg, v.Pos, v.Args, bt)
	}
	c.errorf(e.NodePos(), "PSA_Switch expects an %s here", want)
	return false
}

// psaEngine checks PacketReplicationEngine() / BufferingQueueingEngine():
// the fixed-function parts of the switch, with nothing to configure.
func (c *checker) psaEngine(e syntax.Expr, want string) bool {
	if call, ok := e.(*syntax.Call); ok {
		if id, ok := call.Fn.(*syntax.Ident); ok && id.Name == want && len(call.Args) == 0 {
			return true
		}
	}
	c.errorf(e.NodePos(), "PSA_Switch expects %s() here", want)
	return false
}

// ExternKind is the kind of a stateful extern the compiler implements, by
// the name of its extern type: v1model's and PSA's of the same kind share
// the maps, the P4Info entity and the control plane ("counter",
// "direct_counter", "register", "meter", "direct_meter"); "" for others.
// Their methods differ (PSA's Register.read and Meter.execute return their
// value; backend/psa_externs.go).
func ExternKind(name string) string {
	switch name {
	case "counter", "Counter":
		return "counter"
	case "direct_counter", "DirectCounter":
		return "direct_counter"
	case "register", "Register":
		return "register"
	case "meter", "Meter":
		return "meter"
	case "direct_meter", "DirectMeter":
		return "direct_meter"
	}
	return ""
}

// psaIdleTimeout reads psa_idle_timeout = PSA_IdleTimeout_t.NOTIFY_CONTROL
// (entries age and the control plane is told, as v1model's
// support_timeout = true) or NO_TIMEOUT.
func (c *checker) psaIdleTimeout(p *syntax.TableProp) bool {
	if m, ok := p.Value.(*syntax.Member); ok {
		if id, ok := m.X.(*syntax.Ident); ok && id.Name == "PSA_IdleTimeout_t" {
			switch m.Name {
			case "NOTIFY_CONTROL":
				return true
			case "NO_TIMEOUT":
				return false
			}
		}
	}
	c.errorf(p.Value.NodePos(), "psa_idle_timeout must be PSA_IdleTimeout_t.NOTIFY_CONTROL or PSA_IdleTimeout_t.NO_TIMEOUT")
	return false
}

// psaFunctionExtern reports whether name is a PSA extern without state
// across packets (or, Digest, whose messages go to the control plane) the
// compiler implements (backend/psa_externs.go).
func psaFunctionExtern(name string) bool {
	return name == "Hash" || name == "InternetChecksum" || name == "Checksum" || name == "Random" || name == "Digest"
}
