package backend

import (
	"fmt"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Direct meters: a struct p4_meter in each entry's value (ir.Table.MeterOff),
// run on a hit before the action; dm.read(color) in the action reads the
// colour (s->dm_color; GREEN on a miss and for an unconfigured entry).

// valueStruct declares a table value (or scan entry) struct of size bytes
// whose table value starts at base. A direct meter's cell is plain bytes
// too: the datapath serialises meter updates with a compare-and-swap flag,
// not a bpf_spin_lock, so any map type can hold it (LPM tries included).
func (g *gen) valueStruct(w *strings.Builder, name string, base, size int, t *ir.Table) {
	if t.DirectMeter != nil {
		fmt.Fprintf(w, "/* direct meter %s: struct p4_meter at byte %d */\n", comment(t.DirectMeter.Name), base+t.MeterOff)
	}
	fmt.Fprintf(w, "struct %s { __u8 b[%d]; } __attribute__((aligned(8)));\n", name, size)
}

func (g *gen) needDMColor() {
	for _, f := range g.state {
		if f == "__u32 dm_color" {
			return
		}
	}
	g.state = append(g.state, "__u32 dm_color")
}

// directMeterExec runs a table's direct meter on a hit (v: the entry value).
func (g *gen) directMeterExec(t *ir.Table) {
	if t.DirectMeter == nil {
		return
	}
	if g.awareDirectMeter(t.DirectMeter) {
		g.line("\t%s = 1; /* the meter runs at execute() (psa_dmeter.go) */", g.dmHit(t))
		return
	}
	if t.DirectMeter.Ent.Extern.Name == "DirectMeter" {
		return // a PSA DirectMeter no action executes: it never runs
	}
	g.needDMColor()
	units := "1"
	if t.DirectMeter.Unit == "bytes" {
		units = "s->sm.f_packet_length"
	}
	g.line("\ts->dm_color = p4_meter_cell((struct p4_meter *)(v + %d), %s);", t.MeterOff, units)
}

// directMeterRead generates dm.read(color).
func (g *gen) directMeterRead(call *syntax.Call, cr *sema.CallRef) {
	if cr.Method != "read" || len(call.Args) != 1 {
		g.unsupported(call.Pos, "direct_meter."+cr.Method)
		return
	}
	m := g.p.MeterOf[cr.Instance]
	if m == nil || m.Table == nil {
		g.errorf(call.Pos, "direct meter %s is not attached to a table", cr.Instance.Name)
		return
	}
	if !g.inAction {
		g.errorf(call.Pos, "%s.read can only be called in an action of table %s", cr.Instance.Name, m.Table.Name)
		return
	}
	out := call.Args[0].Value
	if isWide(g.typeOf(out)) || width(g.typeOf(out)) <= 0 {
		g.unsupported(out.NodePos(), "direct_meter.read into this type")
		return
	}
	g.needDMColor()
	g.line("%s = s->dm_color & %s;", g.lval(out), mask(width(g.typeOf(out))))
}
