package backend

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// PSA's DirectMeter.execute() and execute(color). A v1model direct_meter
// runs on every hit of its table, before the action (meters.go), and the
// action only reads the colour. A PSA DirectMeter runs only when an action
// of its table calls execute (the PSA spec: an action that does not call
// it leaves the meter's state unchanged), and a colour-aware call needs
// the colour first. So a PSA direct meter runs at each execute call: the
// table marks its hit (s->dmhit_T), and the call finds the entry again by
// the table's key (still in s->k_T; for a ternary or range table the
// index of the entry that won, s->dmidx_T) and runs the meter cell there,
// colour-aware (the colour-blind execute() is the same with GREEN given).
// Outside a hit of its table (a miss, the default action, the action run
// by another table) the colour given comes back unchanged, as an
// unconfigured cell's.

// awareDirectMeter reports whether m is a PSA DirectMeter, run at its
// execute calls (every call of DirectMeter is execute).
func (g *gen) awareDirectMeter(m *ir.Meter) bool {
	if g.dmAware == nil {
		g.dmAware = map[*sema.Instance]bool{}
		for _, cr := range g.info.Calls {
			if cr.Kind == sema.CallExternMethod && cr.Instance != nil && cr.Instance.Extern.Name == "DirectMeter" && cr.Method == "execute" {
				g.dmAware[cr.Instance] = true
			}
		}
	}
	return m != nil && g.dmAware[m.Ent]
}

// dmHit is the state flag of table t's hit while its action runs.
func (g *gen) dmHit(t *ir.Table) string {
	return g.stateVar("__u32", "dmhit_"+ir.Sanitize(t.Name))
}

// dmIdx holds the winning entry's index of a ternary or range table.
func (g *gen) dmIdx(t *ir.Table) string {
	return g.stateVar("__u32", "dmidx_"+ir.Sanitize(t.Name))
}

// stateVar is a named slot of the per-packet state, declared once.
func (g *gen) stateVar(typ, name string) string {
	decl := typ + " " + name
	for _, f := range g.state {
		if f == decl {
			return "s->" + name
		}
	}
	g.state = append(g.state, decl)
	return "s->" + name
}

// awareDirectMeterExec is the C value (PSA_MeterColor_t) of m.execute()
// or m.execute(color) for a meter executed at its calls.
func (g *gen) awareDirectMeterExec(call *syntax.Call, m *ir.Meter) string {
	t := m.Table
	pre := "0" // GREEN
	if len(call.Args) == 1 {
		pre = v1Color(g.typeOf(call.Args[0].Value), g.rv(call.Args[0].Value))
	}
	units := "1"
	if m.Unit == "bytes" {
		units = "s->sm.f_packet_length"
	}
	var lookup string
	switch t.Kind {
	case ir.KindHash, ir.KindLPM:
		lookup = fmt.Sprintf("(__u8 *)bpf_map_lookup_elem(&%s, s->k_%s)", t.MapName, ir.Sanitize(t.Name))
	case ir.KindScan:
		lookup = fmt.Sprintf("({ __u32 di = %s; __u8 *de = bpf_map_lookup_elem(&%s, &di); de ? de + %d : 0; })", g.dmIdx(t), t.MapName, t.EntryValueOff)
	default:
		return pre // refused by ir (directMeterLayout)
	}
	return psaColor(g.typeOf(call), fmt.Sprintf("({ __u32 pre = %s; __u8 *dv = %s ? %s : 0; dv ? p4_meter_cell_aware((struct p4_meter *)(dv + %d), %s, pre) : pre; })",
		pre, g.dmHit(t), lookup, t.MeterOff, units))
}

// PSA's DirectCounter counts only when an action of its table calls
// count() (the PSA spec: an action that does not call it leaves the
// counter unchanged), where v1model's direct_counter counts every hit.
// count() adds one to s->dccalls_T; the table adds that many packets (and
// as many times the packet's length in bytes) to the entry's counter after
// its action ran on a hit. A miss counts nothing: the default action has
// no entry, so no counter, as with P4Runtime's direct counters.

// psaDirectCounter reports whether c is a PSA DirectCounter.
func psaDirectCounter(c *ir.Counter) bool {
	return c != nil && c.Ent.Extern.Name == "DirectCounter"
}

// dcCalls is the state slot counting table t's count() calls while its
// action runs.
func (g *gen) dcCalls(t *ir.Table) string {
	return g.stateVar("__u32", "dccalls_"+ir.Sanitize(t.Name))
}
