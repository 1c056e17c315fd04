package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/tenant"
)

// heldConfig is the settings of the held NF type: preparing generation 2
// waits for the test.
type heldConfig struct {
	Gen int `json:"gen"`
}

type heldController struct{}

func (heldController) Sync(cube.Handle, *cube.Cube) error { return nil }

// held is what the held NF type's preparation signals and waits on; each
// test run makes its own channels (go test -count=N).
var held struct{ entered, proceed chan struct{} }

func init() {
	cube.Register(&cube.Type{
		Name: "engine-test-held", Description: "portfwd's program, with a preparation the test holds",
		Hooks: []datapath.Hook{datapath.XDP}, Object: portfwd.Type.Object, Config: &heldConfig{},
		Prepare: func(ctx context.Context, c *cube.Cube) (func(), error) {
			var cfg heldConfig
			if json.Unmarshal(c.Config, &cfg) == nil && cfg.Gen == 2 {
				held.entered <- struct{}{}
				<-held.proceed
			}
			return func() {}, nil
		},
		New: func() cube.Controller { return heldController{} },
	})
}

// A tenant's change is checked against ownership when it is applied, under
// the engine's lock, not when it was asked for: a cube the administrator
// gives another tenant while the change is being prepared (the slow part,
// a P4 compile, runs outside the lock) is refused to the first tenant as
// if it did not exist, and keeps its settings.
func TestTenantChangeIsCheckedWhenApplied(t *testing.T) {
	held.entered, held.proceed = make(chan struct{}, 1), make(chan struct{})
	cfg := restartable(t)
	e, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	update(t, e, func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "x", Type: "engine-test-held", Hook: datapath.XDP, Tenant: "red", Config: json.RawMessage(`{"gen":1}`)})
	})
	done := make(chan error, 1)
	go func() {
		done <- e.UpdateAs(context.Background(), tenant.Of("red"), func(tp *cube.Topology, _ tenant.Scope) error {
			c, err := tp.Edit("x")
			if err != nil {
				return err
			}
			c.Config = json.RawMessage(`{"gen":2}`)
			return nil
		})
	}()
	select {
	case <-held.entered:
	case err := <-done:
		t.Fatalf("red's change was not prepared: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("red's change never reached its preparation")
	}
	// meanwhile, the administrator gives the cube to blue
	update(t, e, func(tp *cube.Topology) error {
		c, err := tp.Edit("x")
		c.Tenant = "blue"
		return err
	})
	close(held.proceed)
	err = <-done
	if !errors.Is(err, cube.ErrNotFound) || !strings.Contains(err.Error(), `no cube named "x"`) {
		t.Fatalf("red's change to a cube now blue's: %v, want no cube named \"x\" (404)", err)
	}
	c, ok := e.CubeHeader(tenant.Admin, "x")
	if !ok || c.Tenant != "blue" {
		t.Fatalf("cube x: %+v", c)
	}
	got := e.Topology()
	if string(got.Lookup("x").Config) != `{"gen":1}` {
		t.Fatalf("blue's cube has red's settings: %s", got.Lookup("x").Config)
	}
}
