package engine

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/tenant"
)

// TestPeeringHoldsUpNoOtherChange: while a port is being peered with an
// interface (its program going on the interface, held here by the test),
// a one-rule change and a topology change of other cubes complete; the
// peering then completes with the program it prepared, adopted, not
// attached a second time. Before, the attach ran under the engine's lock.
func TestPeeringHoldsUpNoOtherChange(t *testing.T) {
	lab := netlab.NewT(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			if hook == datapath.TC && os.Getenv(datapath.TCAttachEnv) == string(datapath.TCAttachClassic) {
				t.Skip("a classic tc filter is attached under the lock")
			}
			iface, _, err := lab.RootVeth("pp"+string(hook)[:1]+"0", "pp"+string(hook)[:1]+"1")
			if err != nil {
				t.Fatal(err)
			}
			e := testEngine(t, "enfpp"+string(hook))
			ports := []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}}
			if err := e.Update(func(tp *cube.Topology) error {
				tp.Put(&cube.Cube{Name: "pf", Type: "portfwd", Hook: hook, Ports: slices.Clone(ports)})
				tp.Put(&cube.Cube{Name: "other", Type: "portfwd", Hook: hook, Ports: slices.Clone(ports)})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			entered, release := make(chan string, 1), make(chan struct{})
			var releaseOnce sync.Once
			let := func() { releaseOnce.Do(func() { close(release) }) }
			holdPeering = func(iface string) {
				entered <- iface
				<-release
			}
			defer func() { holdPeering = nil }()
			defer let() // a failure below must not leave the change holding the lock

			peered := make(chan error, 1)
			go func() {
				peered <- e.Update(func(tp *cube.Topology) error { return tp.SetPeer("pf:p0", iface) })
			}()
			select {
			case got := <-entered:
				if got != iface {
					t.Fatalf("held the peering of %s, want %s", got, iface)
				}
			case err := <-peered:
				t.Fatalf("the peering completed without preparing its interface: %v", err)
			case <-time.After(60 * time.Second):
				t.Fatal("the peering did not start")
			}
			within(t, "a one-rule change of another cube", func() error {
				return e.ChangeEntries(tenant.Admin, "other", "rules", func(tx *EntryTx) error {
					_, err := tx.Put(json.RawMessage(`{"in_port":"p0","out_port":"p1"}`))
					return err
				})
			})
			within(t, "a topology change of another cube", func() error {
				return e.Update(func(tp *cube.Topology) error { return tp.SetPeer("other:p1", "pf:p1") })
			})
			let()
			if err := <-peered; err != nil {
				t.Fatal(err)
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			s := e.stubs[StubKey{iface, hook, datapath.Ingress}]
			if s == nil || !s.Adopted {
				t.Fatalf("the peering did not take the program it prepared: %+v", s)
			}
			if h := e.stubHops[StubKey{iface, hook, datapath.Ingress}]; h.Kind != datapath.DstCube || h.Slot != e.slots["pf"] || h.Port != 0 {
				t.Fatalf("the interface's hop is %+v, want pf:p0", h)
			}
		})
	}
}

// TestRefusedPeeringPutsNothingOnTheInterface: a tenant's peering with an
// interface that is not its own is refused before anything is prepared:
// no program goes on the interface, not even for a moment.
func TestRefusedPeeringPutsNothingOnTheInterface(t *testing.T) {
	lab := netlab.NewT(t)
	iface, _, err := lab.RootVeth("pr0", "pr1")
	if err != nil {
		t.Fatal(err)
	}
	e := testEngine(t, "enfpr")
	if _, err := e.SetTenant(tenant.Tenant{Name: "red"}); err != nil {
		t.Fatal(err)
	}
	red := tenant.Of("red")
	if err := e.UpdateAs(context.Background(), red, func(tp *cube.Topology, _ tenant.Scope) error {
		return tp.AddCube(&cube.Cube{Name: "rc", Type: "portfwd", Tenant: "red", Hook: datapath.XDP, Ports: []cube.Port{{Name: "p0", Index: 0}}})
	}); err != nil {
		t.Fatal(err)
	}
	holdPeering = func(iface string) { t.Errorf("%s prepared for a change that is refused", iface) }
	defer func() { holdPeering = nil }()
	err = e.UpdateAs(context.Background(), red, func(tp *cube.Topology, _ tenant.Scope) error { return tp.SetPeer("rc:p0", iface) })
	if err == nil {
		t.Fatal("a tenant peered an interface that is not its own")
	}
	l, lerr := netlink.LinkByName(iface)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if x := l.Attrs().Xdp; x != nil && x.Attached {
		t.Errorf("an XDP program is on %s after the refusal (%v)", iface, err)
	}
}
