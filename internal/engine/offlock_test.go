package engine

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/tenant"
)

// stuck is what the slow NF type's punt handler and action wait on.
var stuck = struct {
	punt, action chan struct{} // closed by the test: the call returns
	entered      chan string   // "punt" or "action", as each call starts
}{}

// slowController is portfwd's controller whose punt handler waits until
// the test lets it go, then reads its cube's map through the handle it
// got (still valid if the cube went meanwhile).
type slowController struct{ cube.Controller }

func (s slowController) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	stuck.entered <- "punt"
	<-stuck.punt
	if m, err := h.Map("pf_table"); err == nil {
		v := make([]byte, m.ValueSize())
		m.Lookup(uint32(0), &v)
	}
}

func init() {
	cube.Register(&cube.Type{
		Name: "engine-test-slow", Description: "portfwd's program, with a punt handler and an action the test holds",
		Hooks: []datapath.Hook{datapath.XDP}, Object: portfwd.Type.Object,
		Actions: []cube.Action{{Name: "wait", Doc: "waits for the test", Do: func(h cube.Handle, c *cube.Cube, _ any) (any, error) {
			stuck.entered <- "action"
			<-stuck.action
			return "done", nil
		}}},
		New: func() cube.Controller { return slowController{portfwd.Type.New()} },
	})
}

// within fails the test unless fn returns in time: a call the engine's
// lock would hold up never does (a liveness check, not a timing one).
func within(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: still waiting after a minute: held up by another cube's slow call", what)
	}
}

// TestSlowCallsHoldUpOnlyTheirCube: a cube's controller that is slow to
// handle a punted packet, or to run an action, holds up neither the API
// (changes, reads, actions, entry changes of other cubes) nor the punts of
// other cubes; its own punts queue behind it; it can be deleted meanwhile,
// and the call in flight finishes on the maps it was given. Run with -race.
func TestSlowCallsHoldUpOnlyTheirCube(t *testing.T) {
	stuck.punt, stuck.action, stuck.entered = make(chan struct{}), make(chan struct{}), make(chan string, 4)
	e := testEngine(t, "enfslow")
	rules := map[string]map[string]json.RawMessage{"rules": {"p0": json.RawMessage(`{"in_port":"p0","out_port":"p1"}`)}}
	ports := []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}}
	if err := e.Update(func(tp *cube.Topology) error {
		tp.Put(&cube.Cube{Name: "slow", Type: "engine-test-slow", Hook: datapath.XDP, Ports: slices.Clone(ports)})
		tp.Put(&cube.Cube{Name: "fast", Type: "portfwd", Hook: datapath.XDP, Ports: slices.Clone(ports)})
		tp.Put(&cube.Cube{Name: "busy", Type: "engine-test-slow", Hook: datapath.XDP})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	slot, fastSlot := e.slots["slow"], e.slots["fast"]
	fast := &recorder{Controller: e.cubes["fast"].ctl, got: make(chan cube.Punt, 8)}
	e.cubes["fast"].ctl = fast
	e.mu.Unlock()

	// slow's handler and busy's action are stuck
	e.punt(datapath.XDP, slot, cube.Punt{Reason: 1})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if out, err := e.Action(tenant.Admin, "busy", "wait", nil); err != nil || out != "done" {
			t.Errorf("busy's action: %v %v", out, err)
		}
	}()
	for range 2 {
		select {
		case <-stuck.entered:
		case <-time.After(60 * time.Second):
			t.Fatal("the slow calls did not start")
		}
	}

	// the rest goes on
	within(t, "a change to other cubes", func() error {
		return e.Update(func(tp *cube.Topology) error {
			tp.Put(&cube.Cube{Name: "new", Type: "portfwd", Hook: datapath.XDP, Ports: slices.Clone(ports), Tables: rules})
			return tp.SetPeer("fast:p1", "new:p0")
		})
	})
	within(t, "an entry change of another cube", func() error {
		return e.ChangeEntries(tenant.Admin, "new", "rules", func(tx *EntryTx) error {
			_, err := tx.Put(json.RawMessage(`{"in_port":"p1","out_port":"p0"}`))
			return err
		})
	})
	within(t, "reads", func() error {
		if _, ok := e.Cube(tenant.Admin, "slow"); !ok {
			t.Error("slow is not listed")
		}
		_, err := e.View(tenant.Admin, "new", "punted")
		return err
	})
	within(t, "another cube's punts", func() error {
		e.punt(datapath.XDP, slot, cube.Punt{Reason: 2}) // queued behind slow's first
		e.punt(datapath.XDP, fastSlot, cube.Punt{Reason: 3})
		if p := <-fast.got; p.Reason != 3 {
			t.Errorf("fast got reason %d, want 3", p.Reason)
		}
		return nil
	})
	within(t, "deleting the cube whose handler is stuck", func() error {
		return e.Update(func(tp *cube.Topology) error { return tp.DeleteCube("slow") })
	})
	close(stuck.punt)
	close(stuck.action)
	wg.Wait()
	// the queued punt went with its cube: never handed over
	select {
	case what := <-stuck.entered:
		t.Fatalf("a %s call reached a deleted cube", what)
	case <-time.After(200 * time.Millisecond):
	}
}
