package p4path

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// PSA programs (PSA_Switch), as the backend runs them (backend/psa.go):
// the ingress parser, the ingress control and the ingress deparser, which
// writes the packet; then, unless the packet is dropped, the egress
// parser parses that packet again (its headers start invalid), the egress
// control and the egress deparser. An egress pipeline that parses, does
// and emits nothing is not run. The packet is dropped unless ingress sends
// it (psa_ingress_output_metadata_t.drop starts true: send_to_port, or
// drop assigned false); a port of PSA_PORT_CPU is the slow path; egress
// drops it with egress_drop or its drop flag. Replication (multicast,
// clones, resubmit, recirculate) is refused by the compiler, so a path is
// one pass of one packet.
type psaPipeline struct {
	ingressParser, egressParser *sema.Parser
	egressEmpty                 bool
}

// psaPortCPU is psa.p4's PSA_PORT_CPU.
const psaPortCPU = 0xfffffffd

// bindPSA takes the six blocks and names their parameters' types.
func (w *walker) bindPSA(blocks []sema.Entity) error {
	ip, ok1 := blocks[sema.PSAIngressParser].(*sema.Parser)
	ep, ok2 := blocks[sema.PSAEgressParser].(*sema.Parser)
	if !ok1 || !ok2 || len(ip.Params) < 3 || len(ep.Params) < 3 {
		return fmt.Errorf("the PSA pipelines' first blocks are not parsers of their six and seven parameters")
	}
	var cs []*sema.Control
	for _, i := range []int{sema.PSAIngress, sema.PSAIngressDeparser, sema.PSAEgress, sema.PSAEgressDeparser} {
		c, ok := blocks[i].(*sema.Control)
		if !ok {
			return fmt.Errorf("PSA block %s is not a control", blocks[i].EntName())
		}
		cs = append(cs, c)
	}
	w.parser, w.controls = ip, cs
	w.psa = &psaPipeline{ingressParser: ip, egressParser: ep, egressEmpty: psaEgressEmpty(ep, cs[2], cs[3])}
	w.hType, _ = ip.Params[1].Type.(*sema.Struct)
	w.mType, _ = ip.Params[2].Type.(*sema.Struct)
	eh, _ := ep.Params[1].Type.(*sema.Struct)
	em, _ := ep.Params[2].Type.(*sema.Struct)
	// the egress pipeline's headers share the ingress ones' storage when
	// of the same type; its metadata is its own (the same type's facts
	// are forgotten when egress starts, runPSA)
	for _, r := range []struct {
		t    *sema.Struct
		name string
	}{{w.hType, "hdr"}, {w.mType, "meta"}, {eh, "ehdr"}, {em, "emeta"}} {
		if r.t != nil && w.roots[r.t] == "" {
			w.roots[r.t] = r.name
		}
	}
	for _, c := range cs {
		for _, p := range c.Params {
			if st, ok := p.Type.(*sema.Struct); ok {
				switch st.Name {
				case "psa_ingress_output_metadata_t":
					w.roots[st] = "ostd"
				case "psa_egress_output_metadata_t":
					w.roots[st] = "eostd"
				}
			}
		}
	}
	w.cpuPort = psaPortCPU
	w.stateB = stateBytes(w.hType) + stateBytes(w.mType)
	if !w.psa.egressEmpty {
		if eh != w.hType {
			w.stateB += stateBytes(eh)
		}
		w.stateB += stateBytes(em)
	}
	return nil
}

// psaEgressEmpty is backend/psa.go's test: an egress parser from start to
// accept with no statement, a control and a deparser with empty bodies and
// no declarations.
func psaEgressEmpty(ep *sema.Parser, eg, ed *sema.Control) bool {
	d := ep.Decl
	if len(d.Locals) > 0 || len(d.States) != 1 || len(d.States[0].Stmts) > 0 ||
		d.States[0].Transition == nil || d.States[0].Transition.Next != "accept" || len(d.States[0].Transition.Select) > 0 {
		return false
	}
	for _, c := range []*sema.Control{eg, ed} {
		if len(c.Decl.Locals) > 0 || c.Decl.Body == nil || len(c.Decl.Body.Stmts) > 0 {
			return false
		}
	}
	return true
}

// runPSA walks the two pipelines.
func (w *walker) runPSA(st *state) {
	st.verdict = "drop" // until ingress sends the packet
	ig, igDeparser, eg, egDeparser := w.controls[0], w.controls[1], w.controls[2], w.controls[3]
	w.pstate("start", st, func(st *state) {
		w.control(ig, st, func(st *state) {
			if st.verdict == "drop" {
				w.finish(st)
				return
			}
			w.control(igDeparser, st, func(st *state) {
				w.deparse(st)
				if w.psa.egressEmpty {
					w.finish(st)
					return
				}
				w.egressPass(st)
				st.pblock = w.psa.egressParser
				w.pstate("start", st, func(st *state) {
					egress := "nothing"
					if len(st.order) > st.igValid {
						egress = strings.Join(shortAll(st.order[st.igValid:]), " ")
					}
					st.steps = append(st.steps, "egress parser: "+egress)
					w.control(eg, st, func(st *state) {
						if st.verdict == "drop" {
							w.finish(st)
							return
						}
						w.control(egDeparser, st, func(st *state) {
							w.deparse(st)
							w.finish(st)
						})
					})
				})
			})
		})
	})
}

// egressPass starts the egress pipeline on the packet the ingress
// deparser wrote: its headers invalid, parsed from the start again, its
// own metadata zeroed.
func (w *walker) egressPass(st *state) {
	st.hdrs = map[string]hinst{}
	st.next = map[string]int{}
	st.seen = map[string]int{}
	st.emitted = nil
	st.off = 0
	st.parserErr = false
	// egress metadata of the ingress metadata's type is named meta too
	em, _ := w.psa.egressParser.Params[2].Type.(*sema.Struct)
	forget := map[string]bool{"hdr": true, "ehdr": true, "emeta": true, "meta": em == w.mType}
	for _, m := range []map[string]*big.Int{st.facts} {
		for k := range m {
			if forget[rootOf(k)] {
				delete(st.facts, k)
				delete(st.notEq, k)
			}
		}
	}
	st.igValid = len(st.order)
	st.parser = append(st.parser, "egress:")
	st.use(TermPSAEgress, 1, "PSA egress pipeline started")
}

// rootOf is the root of a canonical name ("hdr" of "hdr.ipv4.ttl").
func rootOf(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' || name[i] == '[' {
			return name[:i]
		}
	}
	return name
}

// boolValue is a constant bool's value (1 or 0) or what the path knows.
func (w *walker) boolValue(e syntax.Expr, st *state) (*big.Int, bool) {
	if b, ok := e.(*syntax.BoolLit); ok {
		if b.Value {
			return big.NewInt(1), true
		}
		return big.NewInt(0), true
	}
	return w.value(e, st)
}

// psaAction runs psa.p4's own actions: send_to_port(ostd, port),
// ingress_drop(ostd), egress_drop(ostd). They write the output metadata
// through their parameters; the path follows what they decide.
func (w *walker) psaAction(c *syntax.Call, a *sema.Action, st *state) bool {
	if !psaBuiltin(a, a.Name) {
		return false
	}
	switch a.Name {
	case "multicast":
		st.use(TermAction, 1, "action multicast")
		st.use(TermStmt, 3, "action multicast")
		st.verdict = "send"
		st.mcast = true
		st.facts["ostd.drop"] = big.NewInt(0)
		return true
	case "send_to_port":
		st.use(TermAction, 1, "action send_to_port")
		st.use(TermStmt, 3, "action send_to_port")
		st.verdict = "send"
		if len(c.Args) > 1 {
			if v, ok := w.value(c.Args[1].Value, st); ok && v.Cmp(big.NewInt(psaPortCPU)) == 0 {
				st.verdict = "punt"
			}
		}
		st.facts["ostd.drop"] = big.NewInt(0)
		return true
	case "ingress_drop", "egress_drop":
		st.use(TermAction, 1, "action "+a.Name)
		st.stmt()
		st.verdict = "drop"
		if a.Name == "ingress_drop" {
			st.facts["ostd.drop"] = big.NewInt(1)
		} else {
			st.facts["eostd.drop"] = big.NewInt(1)
		}
		return true
	}
	return false
}

// psaBuiltin reports whether a is psa.p4's action of that name.
func psaBuiltin(a *sema.Action, name string) bool {
	return a != nil && a.Decl != nil && a.Decl.Pos.File == "<psa.p4>" && a.Name == name
}

// psaCopies are the output metadata that copy a packet: a multicast
// group, a clone, a resubmit (priced as v1model's: the replication state
// on every packet, a copy when taken).
var psaCopies = map[string]bool{"ostd.multicast_group": true, "ostd.clone": true, "ostd.resubmit": true, "eostd.clone": true}

// psaAssign follows assignments to the output metadata's drop flag and
// egress port; it reports whether lhs was one.
func (w *walker) psaAssign(lhs string, a *syntax.AssignStmt, st *state) bool {
	switch lhs {
	case "ostd.drop", "eostd.drop":
		v, ok := w.boolValue(a.RHS, st)
		if ok {
			st.facts[lhs] = v
		}
		switch {
		case ok && v.Sign() != 0:
			st.verdict = "drop"
		case ok && lhs == "ostd.drop" && st.verdict == "drop":
			st.verdict = "send"
			if p, ok := st.facts["ostd.egress_port"]; ok && p != nil && p.Cmp(big.NewInt(psaPortCPU)) == 0 {
				st.verdict = "punt"
			}
		case !ok && lhs == "ostd.drop":
			st.verdict = "send" // not known: the path where it sends
		}
		return true
	case "ostd.multicast_group", "ostd.clone", "ostd.resubmit", "eostd.clone":
		v, ok := w.boolValue(a.RHS, st)
		if !ok || v.Sign() != 0 {
			st.use(TermClone, 1, lhs)
		}
		return true
	case "ostd.egress_port":
		if st.verdict != "drop" {
			st.verdict = "send"
			if v, ok := w.value(a.RHS, st); ok && v.Cmp(big.NewInt(psaPortCPU)) == 0 {
				st.verdict = "punt"
			}
		}
		return true
	}
	return false
}

// psaExternMethod prices PSA's externs (psa.p4) by the v1model extern
// each compiles to, and those v1model has not: Hash, Checksum,
// InternetChecksum, Random, Digest. It reports whether it priced c.
func (w *walker) psaExternMethod(c *syntax.Call, cr *sema.CallRef, st *state) bool {
	arg := func(i int) syntax.Expr {
		if i < len(c.Args) {
			return c.Args[i].Value
		}
		return nil
	}
	name := cr.Instance.Name
	switch cr.Instance.Extern.Name + "." + cr.Method {
	case "Register.read":
		st.use(TermRegRead, 1, "register "+name+" read")
	case "Register.write":
		st.use(TermRegWrite, 1, "register "+name+" write")
	case "Counter.count":
		st.use(TermCounter, 1, "counter "+name)
	case "Meter.execute":
		st.use(TermMeter, 1, "meter "+name)
	case "DirectCounter.count":
		// the table adds the calls' counts to its entry after the action
		// (two atomic adds, once however many calls); a call outside a
		// hit of its table counts nothing
		if c := w.prog.CounterOf[cr.Instance]; c != nil && st.hit != nil && c.Table == st.hit && !st.counted {
			st.counted = true
			st.use(TermDirectCount, 1, "direct counter "+name)
		}
	case "DirectMeter.execute":
		// on a hit of its table, the entry looked up again by the key and
		// its meter cell run; elsewhere the colour given comes back
		if m := w.prog.MeterOf[cr.Instance]; m != nil && st.hit != nil && m.Table == st.hit {
			w.relookup(m.Table, st, "direct meter "+name)
			st.use(TermMeter, 1, "direct meter "+name)
		}
	case "Hash.get_hash":
		data := arg(0)
		if len(c.Args) == 3 {
			data = arg(1) // get_hash(base, data, max)
		}
		w.hashUse(w.ctorAlgo(cr.Instance), w.listBytes(data), st, "hash "+name)
	case "Checksum.update":
		w.hashUse(w.ctorAlgo(cr.Instance), w.listBytes(arg(0)), st, "checksum "+name)
	case "InternetChecksum.add", "InternetChecksum.subtract":
		st.use(TermCsum, 1, "checksum "+name)
		st.use(TermCsumByte, float64(w.listBytes(arg(0))), "checksum "+name)
	case "Random.read":
		st.use(TermRandom, 1, "random "+name)
	case "Digest.pack":
		st.use(TermDigest, 1, "digest "+name)
	default:
		return false
	}
	return true
}

// ctorAlgo is the hash algorithm a PSA Hash or Checksum is constructed
// with (PSA_HashAlgorithm_t.CRC16 ...), in v1model's names.
func (w *walker) ctorAlgo(in *sema.Instance) string {
	if in.Decl == nil || len(in.Decl.Args) == 0 {
		return ""
	}
	switch algoName(in.Decl.Args[0].Value) {
	case "CRC16":
		return "crc16"
	case "CRC32", "TARGET_DEFAULT":
		return "crc32"
	case "IDENTITY":
		return "identity"
	case "ONES_COMPLEMENT16":
		return "csum16"
	}
	return "other"
}
