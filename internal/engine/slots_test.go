package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	_ "github.com/edgenf/edgenf/internal/nf/monitor"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
)

// TestChangeThatFreesAndTakesASlotKeepsTraffic is the vanishing-traffic bug:
// one change deletes a cube and adds a monitor on an interface-peered port.
// The monitor used to take the deleted cube's patch-panel slot while that
// cube was still loaded; unloading it afterwards emptied the slot (the
// monitor's program was gone from the panel), and the interface's direct
// entry could be the deleted cube's. Frames through the port vanished until
// the daemon restarted and re-filled the panel.
func TestChangeThatFreesAndTakesASlotKeepsTraffic(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			lab := netlab.NewT(t)
			a, err := lab.Host("a")
			if err != nil {
				t.Fatal(err)
			}
			b, err := lab.Host("b")
			if err != nil {
				t.Fatal(err)
			}
			va, err := lab.Veth(a, "eth0", "va", "198.18.7.2/24")
			if err != nil {
				t.Fatal(err)
			}
			vb, err := lab.Veth(b, "eth0", "vb", "198.18.7.3/24")
			if err != nil {
				t.Fatal(err)
			}
			e := nftest.Engine(t)
			// "old" is created first: it holds the lowest slot.
			nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
				return tp.AddCube(&cube.Cube{Name: "old", Type: "portfwd", Hook: hook, Ports: []cube.Port{{Name: "p0", Index: 0}}})
			})
			nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
				if err := tp.AddCube(&cube.Cube{Name: "pf", Type: "portfwd", Hook: hook, Ports: []cube.Port{
					{Name: "p0", Index: 0, Peer: va}, {Name: "p1", Index: 1, Peer: vb}}}); err != nil {
					return err
				}
				for _, r := range []string{`{"in_port":"p0","out_port":"p1"}`, `{"in_port":"p1","out_port":"p0"}`} {
					if _, err := tp.PutEntry("pf", "rules", json.RawMessage(r)); err != nil {
						return err
					}
				}
				return nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := a.Ping(ctx, "198.18.7.3", 2); err != nil {
				t.Fatalf("before the change: %v", err)
			}
			// One change: "old" goes, a monitor comes onto pf:p0.
			nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
				if err := tp.DeleteCube("old"); err != nil {
					return err
				}
				if err := tp.AddCube(&cube.Cube{Name: "mon", Type: "monitor", Hook: hook}); err != nil {
					return err
				}
				return tp.Attach("mon", "pf:p0", "last")
			})
			if err := a.Ping(ctx, "198.18.7.3", 3); err != nil {
				t.Fatalf("after a change that deleted a cube and attached a monitor: %v", err)
			}
			st, err := e.Stats(tenant.Admin, "mon")
			if err != nil {
				t.Fatal(err)
			}
			// the 3 requests enter pf through p0 (monitor ingress), the 3
			// replies leave through it (monitor egress)
			if in, out := st.Directions["ingress"].RxPackets, st.Directions["egress"].RxPackets; in < 3 || out < 3 {
				t.Errorf("the monitor saw %d packets in and %d out, want at least 3 each", in, out)
			}
		})
	}
}
