package backend

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// PSA's stateful externs whose methods return their value (psa.p4):
// Register.read(index), Meter.execute(index) and DirectMeter.execute().
// They share v1model's maps (ir: sema.ExternKind); what differs is the
// call's shape and, for meters, the colour's encoding. Each is a C
// statement expression, usable anywhere an expression is.

// psaExternValue is the C value of such a call; false if call is not one
// (or after an error, reported).
func (g *gen) psaExternValue(call *syntax.Call, cr *sema.CallRef) (string, bool) {
	in := cr.Instance
	switch in.Extern.Name + "." + cr.Method {
	case "Register.read":
		// an out-of-range index reads 0 (the map starts zeroed: psa.p4's
		// initial value, which sema allows only as 0)
		r := g.p.RegisterOf[in]
		if r == nil || len(call.Args) != 1 {
			break
		}
		return fmt.Sprintf("({ __u32 ri = (__u32)%s; __u64 *rc = ri < %d ? bpf_map_lookup_elem(&%s, &ri) : 0; rc ? (*(volatile __u64 *)rc & %s) : 0; })",
			g.rv(call.Args[0].Value), r.Size, r.MapName, mask(r.Width)), true
	case "Meter.execute":
		m := g.p.MeterOf[in]
		if m == nil {
			break
		}
		if len(call.Args) != 1 {
			g.unsupported(call.Pos, "color-aware Meter.execute(index, color)")
			return "0", true
		}
		units := "1"
		if m.Unit == "bytes" {
			units = "s->sm.f_packet_length"
		}
		// an index out of range is GREEN, as in v1model
		return fmt.Sprintf("({ __u32 mi = (__u32)%s; %s; })", g.rv(call.Args[0].Value),
			psaColor(g.typeOf(call), fmt.Sprintf("(mi < %d ? p4_meter_exec(&%s, mi, %s) : 0)", m.Size, m.MapName, units))), true
	case "DirectMeter.execute":
		m := g.p.MeterOf[in]
		if m == nil {
			break
		}
		if len(call.Args) != 0 {
			g.unsupported(call.Pos, "color-aware DirectMeter.execute(color)")
			return "0", true
		}
		if m.Table == nil {
			g.errorf(call.Pos, "direct meter %s is not attached to a table (psa_direct_meter)", in.Name)
			return "0", true
		}
		if !g.inAction {
			g.errorf(call.Pos, "%s.execute can only be called in an action of table %s", in.Name, m.Table.Name)
			return "0", true
		}
		g.needDMColor()
		return psaColor(g.typeOf(call), "s->dm_color"), true
	}
	return "", false
}

// psaColor turns a v1model colour (GREEN 0, YELLOW 1, RED 2: the meter
// runtime's, meter.h) into PSA_MeterColor_t t (declared RED, GREEN,
// YELLOW: its members' positions, unless the enum gives values).
func psaColor(t sema.Type, v1 string) string {
	val := map[string]int{"RED": 0, "GREEN": 1, "YELLOW": 2}
	if e, ok := t.(*sema.Enum); ok {
		for i, m := range e.Members {
			val[m] = i
			if e.Values != nil {
				val[m] = int(e.Values[i].Int64())
			}
		}
	}
	return fmt.Sprintf("({ __u32 c = %s; c == 0 ? %d : c == 1 ? %d : %d; })", v1, val["GREEN"], val["YELLOW"], val["RED"])
}
