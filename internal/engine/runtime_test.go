package engine_test

import (
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/tenant"
)

// TestRuntimeStatePersists: a change of a cube's runtime state alone (a
// P4Runtime controller's cookie) reaches the state file and survives a
// restart; a declarative apply that keeps the cube keeps it.
func TestRuntimeStatePersists(t *testing.T) {
	cfg := restartable(t)
	e := openAt(t, cfg)
	update(t, e, func(tp *cube.Topology) error { return tp.AddCube(&cube.Cube{Name: "pf", Type: "portfwd"}) })
	update(t, e, func(tp *cube.Topology) error {
		return tp.SetRuntime("pf", "svc", []byte(`{"cookie":"18364758544493064721"}`))
	})
	e.Close()
	e = openAt(t, cfg)
	defer e.Close()
	c, ok := e.CubeHeader(tenant.Admin, "pf")
	if !ok || string(c.Runtime["svc"]) != `{"cookie":"18364758544493064721"}` {
		t.Fatalf("runtime after a restart: %s", c.Runtime)
	}
	next := cube.NewTopology()
	if err := next.AddCube(&cube.Cube{Name: "pf", Type: "portfwd"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Replace(t.Context(), next, false); err != nil {
		t.Fatal(err)
	}
	if c, _ := e.CubeHeader(tenant.Admin, "pf"); string(c.Runtime["svc"]) == "" {
		t.Fatal("a declarative apply dropped the runtime state")
	}
}
