package backend

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// PSA's externs whose methods return their value (psa.p4). The stateful
// ones, Register.read(index), Meter.execute(index) and
// DirectMeter.execute(), share v1model's maps (ir: sema.ExternKind); what
// differs is the call's shape and, for meters, the colour's encoding:
// each is a C statement expression. Hash, InternetChecksum and Random
// have no state across packets: a value is computed by lines generated
// before the statement that uses it, into per-packet state (psaTemp).

// psaExternValue is the C value of such a call; false if call is not one
// (or after an error, reported).
func (g *gen) psaExternValue(call *syntax.Call, cr *sema.CallRef) (string, bool) {
	in := cr.Instance
	switch in.Extern.Name + "." + cr.Method {
	case "Register.read":
		// an out-of-range index reads the initial value, as a cell never
		// written
		r := g.p.RegisterOf[in]
		if r == nil || len(call.Args) != 1 {
			break
		}
		if v, ok := g.atomicRegisterRead(cr, r); ok { // atomic.go
			return v, true
		}
		return fmt.Sprintf("({ __u32 ri = %s; __u64 *rc = ri < %d ? bpf_map_lookup_elem(&%s, &ri) : 0; rc ? %s : %s; })",
			g.cellIndex(call.Args[0].Value), r.Size, r.MapName, regDecode(r, "*(volatile __u64 *)rc"), regInit(r)), true
	case "Meter.execute":
		m := g.p.MeterOf[in]
		if m == nil {
			break
		}
		units := "1"
		if m.Unit == "bytes" {
			units = "s->sm.f_packet_length"
		}
		if len(call.Args) == 2 {
			// colour-aware: never better than the colour given; an index
			// out of range leaves it
			return fmt.Sprintf("({ __u32 mi = %s; __u32 pre = %s; %s; })", g.cellIndex(call.Args[0].Value),
				v1Color(g.typeOf(call), g.rv(call.Args[1].Value)),
				psaColor(g.typeOf(call), fmt.Sprintf("(mi < %d ? p4_meter_exec_aware(&%s, mi, %s, pre) : pre)", m.Size, m.MapName, units))), true
		}
		// an index out of range is GREEN, as in v1model
		return fmt.Sprintf("({ __u32 mi = %s; %s; })", g.cellIndex(call.Args[0].Value),
			psaColor(g.typeOf(call), fmt.Sprintf("(mi < %d ? p4_meter_exec(&%s, mi, %s) : 0)", m.Size, m.MapName, units))), true
	case "DirectMeter.execute":
		m := g.p.MeterOf[in]
		if m == nil {
			break
		}
		if m.Table == nil {
			g.errorf(call.Pos, "direct meter %s is not attached to a table (psa_direct_meter)", in.Name)
			return "0", true
		}
		if !g.inAction {
			g.errorf(call.Pos, "%s.execute can only be called in an action of table %s", in.Name, m.Table.Name)
			return "0", true
		}
		if g.awareDirectMeter(m) {
			return g.awareDirectMeterExec(call, m), true // psa_dmeter.go
		}
		g.needDMColor()
		return psaColor(g.typeOf(call), "s->dm_color"), true
	case "Hash.get_hash":
		return g.psaHash(call, in), true
	case "Random.read":
		w := width(g.typeOf(call))
		if w <= 0 || w > 64 || isWide(g.typeOf(call)) || len(in.Args) != 2 {
			g.unsupported(call.Pos, "Random of this type (bit<N>, N <= 64)")
			return "0", true
		}
		t := g.psaTemp()
		g.randomInto(t, w, in.Args[0].String(), in.Args[1].String())
		return t, true
	case "Checksum.get":
		return g.psaChecksumGet(call, in), true // psa_checksum.go
	case "InternetChecksum.get":
		return fmt.Sprintf("((__u64)p4_fold16(%s))", g.psaCsumState(in)), true
	case "InternetChecksum.get_state":
		return fmt.Sprintf("((__u64)(__u16)~p4_fold16(%s))", g.psaCsumState(in)), true
	}
	return "", false
}

// psaExternStmt generates the PSA extern methods called as statements
// that return nothing (InternetChecksum's, Digest.pack); false if call
// is not one.
func (g *gen) psaExternStmt(call *syntax.Call, cr *sema.CallRef) bool {
	in := cr.Instance
	switch in.Extern.Name + "." + cr.Method {
	case "Digest.pack":
		g.digestCall(call) // slowpath.go
	case "Checksum.clear", "Checksum.update":
		g.psaChecksumStmt(call, in, cr.Method) // psa_checksum.go
	case "InternetChecksum.clear":
		g.line("%s = 0;", g.psaCsumState(in))
	case "InternetChecksum.set_state":
		g.line("%s = (__u16)%s;", g.psaCsumState(in), g.rv(call.Args[0].Value))
	case "InternetChecksum.add", "InternetChecksum.subtract":
		if g.listHasVarbit(call.Args[0].Value) {
			g.unsupported(call.Args[0].Value.NodePos(), "a varbit field in InternetChecksum."+cr.Method)
			return true
		}
		st := g.psaCsumState(in)
		if cr.Method == "add" {
			// from the field values where the list allows (packet.go), as
			// v1model's update_checksum
			sum, fast := g.csumSum(call.Args[0].Value)
			if !fast {
				bits := g.packList(call.Args[0].Value)
				sum = fmt.Sprintf("p4_sum16(s->cbuf, %d)", (bits+7)/8)
			}
			g.line("%s += %s;", st, sum)
			break
		}
		// ones' complement subtraction adds each word's complement: n
		// words of 0xffff minus their sum
		bits := g.packList(call.Args[0].Value)
		nb := (bits + 7) / 8
		g.line("%s += %d * 0xffffULL - p4_sum16(s->cbuf, %d);", st, (nb+1)/2, nb)
	default:
		return false
	}
	return true
}

// psaCsumState is the running sum of an InternetChecksum instance: 64
// bits, folded when read; zero for each packet (the state is).
func (g *gen) psaCsumState(in *sema.Instance) string { return g.psaInstState("ick_", in) }

// psaInstState is a 64-bit slot of the per-packet state that instance in
// keeps (named prefix + its name), zero at each packet's start.
func (g *gen) psaInstState(prefix string, in *sema.Instance) string {
	return g.stateVar("__u64", prefix+ir.Sanitize(in.FullName)) // psa_dmeter.go
}

// psaTemp is a fresh 64-bit slot of the per-packet state.
func (g *gen) psaTemp() string {
	n := g.newTmp("px")
	g.state = append(g.state, "__u64 "+n)
	return "s->" + n
}

// psaHash generates Hash.get_hash(data) or get_hash(base, data, max)
// (base + hash % max; max 0 leaves the hash), the algorithm the
// instance's constructor names.
func (g *gen) psaHash(call *syntax.Call, in *sema.Instance) string {
	algs := []string{"identity", "crc32", "crc32_custom", "crc16", "crc16_custom", "csum16", "crc32"} // PSA_HashAlgorithm_t; TARGET_DEFAULT: CRC32
	alg := "?"
	if len(in.Args) == 1 && in.Args[0].IsInt64() && in.Args[0].Int64() < int64(len(algs)) {
		alg = algs[in.Args[0].Int64()]
	}
	data := call.Args[0].Value
	if len(call.Args) == 3 {
		data = call.Args[1].Value
	}
	if g.listHasVarbit(data) {
		g.unsupported(data.NodePos(), "hashing a varbit field")
		return "0"
	}
	ow := width(g.typeOf(call))
	t := g.psaTemp()
	g.line("{")
	g.indent++
	h := g.hashList(alg, data, in.Decl.Pos, call.Pos)
	if len(call.Args) == 3 {
		g.line("__u64 h = %s;", h)
		g.line("__u64 mx = %s;", g.rv(call.Args[2].Value))
		g.line("%s = ((__u64)%s + (mx ? h %% mx : h)) & %s;", t, g.rv(call.Args[0].Value), mask(ow))
	} else {
		g.line("%s = (__u64)%s & %s;", t, h, mask(ow))
	}
	g.indent--
	g.line("}")
	return t
}

// v1Color turns PSA_MeterColor_t value v (of enum t) into the meter
// runtime's colour (GREEN 0, YELLOW 1, RED 2).
func v1Color(t sema.Type, v string) string {
	val := psaColors(t)
	return fmt.Sprintf("({ __u32 c = %s; c == %d ? 2 : c == %d ? 1 : 0; })", v, val["RED"], val["YELLOW"])
}

// psaColor turns a v1model colour (GREEN 0, YELLOW 1, RED 2: the meter
// runtime's, meter.h) into PSA_MeterColor_t t (declared RED, GREEN,
// YELLOW: its members' positions, unless the enum gives values).
func psaColor(t sema.Type, v1 string) string {
	val := psaColors(t)
	return fmt.Sprintf("({ __u32 c = %s; c == 0 ? %d : c == 1 ? %d : %d; })", v1, val["GREEN"], val["YELLOW"], val["RED"])
}

// psaColors are the values of PSA_MeterColor_t t's members.
func psaColors(t sema.Type) map[string]int {
	val := map[string]int{"RED": 0, "GREEN": 1, "YELLOW": 2}
	if e, ok := t.(*sema.Enum); ok {
		for i, m := range e.Members {
			val[m] = i
			if e.Values != nil {
				val[m] = int(e.Values[i].Int64())
			}
		}
	}
	return val
}
