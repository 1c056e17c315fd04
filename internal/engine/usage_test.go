package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	_ "github.com/edgenf/edgenf/internal/nf/router"
	"github.com/edgenf/edgenf/internal/tenant"
)

// checkUsage fails unless the kept holdings of every tenant are what a
// count over the whole applied topology finds.
func checkUsage(t *testing.T, e *Engine, step string) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, name := range []string{"red", "blue"} {
		want, err := tenant.Count(e.topo, name, e.cubeMemory)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.usage(name, true); err != nil || !maps.Equal(got, want) {
			t.Fatalf("%s: %s holds %v (%v), a count finds %v", step, name, got, err, want)
		}
	}
}

// TestQuotaCountsTheDirtySet: tenants' holdings are kept change by change
// (cubes, ports, attachments, entries, kernel memory), equal to a count
// of the whole topology after every kind of change; a tenant's change
// counts only the cubes it changes, however many the topology has; and
// the refusals are those of a count.
func TestQuotaCountsTheDirtySet(t *testing.T) {
	e := testEngine(t, "enfusage")
	ctx := context.Background()
	for _, n := range []string{"red", "blue"} {
		if _, err := e.SetTenant(tenant.Tenant{Name: n, Quota: tenant.Quota{tenant.Cubes: 100, tenant.Ports: 100, tenant.Attachments: 2}}); err != nil {
			t.Fatal(err)
		}
	}
	admin := func(step string, fn func(tp *cube.Topology) error) {
		t.Helper()
		if err := e.Update(fn); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		checkUsage(t, e, step)
	}
	red := tenant.Of("red")
	as := func(step string, fn func(tp *cube.Topology) error) error {
		t.Helper()
		err := e.UpdateAs(ctx, red, func(tp *cube.Topology, _ tenant.Scope) error { return fn(tp) })
		checkUsage(t, e, step)
		return err
	}
	admin("many cubes", func(tp *cube.Topology) error {
		for i := range 30 {
			for _, c := range chain(i) {
				c.Tenant = []string{"red", "blue", ""}[i%3]
				tp.Put(c)
			}
		}
		tp.Put(&cube.Cube{Name: "rr", Type: "router", Tenant: "red", Ports: []cube.Port{{Name: "up", Index: 0, Addresses: []string{"198.18.1.1/24"}}}})
		tp.Put(&cube.Cube{Name: "mon", Type: "monitor", Tenant: "red"})
		return nil
	})
	if err := as("attach", func(tp *cube.Topology) error { return tp.Attach("mon", "c0a:p0", "last") }); err != nil {
		t.Fatal(err)
	}
	// A tenant's change counts what it changes, not its other cubes nor
	// the topology's.
	e.mu.Lock()
	before := e.tenants.priced
	e.mu.Unlock()
	if err := as("add port", func(tp *cube.Topology) error { return tp.AddPort("c3a", cube.Port{Name: "p2", Index: 2}) }); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	counted := e.tenants.priced - before
	e.mu.Unlock()
	if counted > 2 { // the cube as changed, checked then applied
		t.Fatalf("a one-port change counted %d cubes", counted)
	}
	if err := as("entry", func(tp *cube.Topology) error {
		_, err := tp.PutEntry("c0a", "rules", json.RawMessage(`{"in_port":"p1","out_port":"p0"}`))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// entries written in place (the router's): counted without a change
	for i := range 3 {
		if err := e.ChangeEntries(red, "rr", "routes", func(tx *EntryTx) error {
			_, err := tx.Put(json.RawMessage(fmt.Sprintf(`{"prefix":"198.18.%d.0/24","port":"up"}`, 10+i)))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	checkUsage(t, e, "entries in place")
	admin("move a cube to blue, attached", func(tp *cube.Topology) error {
		c, err := tp.Edit("mon")
		c.Tenant = "blue"
		return err
	})
	admin("move it back", func(tp *cube.Topology) error {
		c, err := tp.Edit("mon")
		c.Tenant = "red"
		return err
	})
	admin("delete an attached cube's peer chain", func(tp *cube.Topology) error {
		tp.Detach("mon")
		return tp.DeleteCube("c0b")
	})

	// Refusals: as a count would refuse, with its numbers; nothing changes.
	e.mu.Lock()
	use, _ := e.usage("red", false)
	ports := use[tenant.Ports]
	e.mu.Unlock()
	if _, err := e.SetTenant(tenant.Tenant{Name: "red", Quota: tenant.Quota{tenant.Ports: ports + 2, tenant.Attachments: 2}}); err != nil {
		t.Fatal(err)
	}
	rev := e.Revision()
	err := as("over ports", func(tp *cube.Topology) error {
		for i := range 3 {
			if err := tp.AddPort("c6a", cube.Port{Name: fmt.Sprintf("x%d", i), Index: 3 + i}); err != nil {
				return err
			}
		}
		return nil
	})
	want := tenant.Exceeded(tenant.Ports, ports+2, ports, ports+3).Error()
	if !errors.Is(err, cube.ErrForbidden) || err.Error() != want {
		t.Fatalf("over the ports quota: %v, want %q", err, want)
	}
	if e.Revision() != rev {
		t.Fatal("a refused change changed the state")
	}
	err = as("over attachments", func(tp *cube.Topology) error {
		if err := tp.Attach("mon", "c3a:p0", "last"); err != nil {
			return err
		}
		for i := range 2 {
			name := fmt.Sprintf("mon%d", i)
			if err := tp.AddCube(&cube.Cube{Name: name, Type: "monitor", Tenant: "red"}); err != nil {
				return err
			}
			if err := tp.Attach(name, "c3a:p1", "last"); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, cube.ErrForbidden) || !strings.Contains(err.Error(), "over quota attachments: limit 2, in use 0, this change needs 3") {
		t.Fatalf("over the attachments quota: %v", err)
	}
}
