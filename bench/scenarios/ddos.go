package scenarios

import (
	"encoding/json"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	_ "github.com/edgenf/edgenf/internal/nf/ddos" // registers the ddos type
)

// The ddos group: how fast blacklisted traffic is dropped at a1, next to a
// bare XDP_DROP program there. Nothing reaches the sink: the rate is a1's
// received frames (dropped ones included).

// ddosBulk is the number of other /32 entries in the blacklist: the lookups
// run in a table of realistic size.
const ddosBulk = 100_000

func init() {
	scenario.Register(scenario.Scenario{
		Name: "xdp-drop", Group: "ddos", Baseline: true, Quick: true,
		Doc:   "bare XDP_DROP program on a1 (two instructions), the ceiling",
		Setup: setupBareDrop,
	})
	for _, c := range []struct{ name, doc, list string }{
		{"ddos-exact-xdp", "source hits an exact /32 entry", "exact"},
		{"ddos-prefix-xdp", "source misses the exact entries and hits a /24 prefix (the inlined per-length table)", "prefix"},
	} {
		c := c
		scenario.Register(scenario.Scenario{
			Name: c.name, Group: "ddos", Order: 10, Quick: c.list == "exact", Reps: 11, // target 0.9: a thin margin
			Doc:   fmt.Sprintf("edgenf ddos cube attached to a1 at XDP, source blacklist of %d other /32 entries; %s", ddosBulk, c.doc),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupDDoS(e, c.list) },
		})
	}
}

// rxHandled counts the frames a1 received (XDP drops included).
func rxHandled(ifindex int) func() (uint64, error) {
	return func() (uint64, error) {
		lk, err := netlink.LinkByIndex(ifindex)
		if err != nil {
			return 0, err
		}
		return lk.Attrs().Statistics.RxPackets, nil
	}
}

func setupBareDrop(e *scenario.Env) (*scenario.Topology, error) {
	p, err := e.NewPath(false)
	if err != nil {
		return nil, err
	}
	drop, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, datapath.XDPDrop), asm.Return()}})
	if err != nil {
		return nil, err
	}
	e.Defer(func() { drop.Close() })
	if err := p.AttachXDP(drop, p.A1Idx); err != nil {
		return nil, err
	}
	t := p.Topology(p.A1MAC)
	t.Handled = rxHandled(p.A1Idx)
	t.CostOn(drop)
	return t, nil
}

// setupDDoS attaches a ddos cube to a1 whose source blacklist matches the
// generator's sources (198.18.0.10–73) exactly or by prefix, among ddosBulk
// other entries (198.18.1.0 on).
func setupDDoS(e *scenario.Env, list string) (*scenario.Topology, error) {
	p, eng, root, err := enginePath(e, datapath.XDP)
	if err != nil {
		return nil, err
	}
	name := "dd" + e.ID()
	rows := map[string]json.RawMessage{}
	add := func(prefix string) {
		rows[prefix] = json.RawMessage(fmt.Sprintf(`{"prefix":%q}`, prefix))
	}
	for i := range ddosBulk {
		n := 1<<8 + i // 198.18.1.0 on
		add(fmt.Sprintf("198.%d.%d.%d/32", 18+n>>16, n>>8&0xff, n&0xff))
	}
	if list == "exact" {
		for i := 10; i < 74; i++ {
			add(fmt.Sprintf("198.18.0.%d/32", i))
		}
	} else {
		add("198.18.0.0/24")
	}
	err = eng.Update(func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: name, Type: "ddos", Hook: datapath.XDP,
			Tables: map[string]map[string]json.RawMessage{"blacklist_src": rows}}); err != nil {
			return err
		}
		return tp.Attach(name, p.A1, "last")
	})
	if err != nil {
		return nil, err
	}
	t := p.Topology(p.A1MAC)
	t.Handled = rxHandled(p.A1Idx)
	t.Info["entries"] = fmt.Sprint(len(rows))
	if list == "exact" {
		if err := apiEntryRate(e, eng, t, rows); err != nil { // api.go
			return nil, err
		}
	}
	stubCost(e, t, root, p.A1, datapath.XDP)
	return t, nil
}
