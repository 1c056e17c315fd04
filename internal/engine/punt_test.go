package engine

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/testenv"
)

// recorder is a controller that keeps the punts it is handed.
type recorder struct {
	cube.Controller
	got []cube.Punt
}

func (r *recorder) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) { r.got = append(r.got, p) }

// TestPuntReachesTheCubeOfItsSlot: a punt names its cube by panel slot
// only; when a cube is deleted and another takes its slot, punts go to the
// new one.
func TestPuntReachesTheCubeOfItsSlot(t *testing.T) {
	testenv.NeedRoot(t)
	e, err := Open(Config{
		PinRoot:   filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfpunt-%d", os.Getpid())),
		StateFile: filepath.Join(t.TempDir(), "state.json"),
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Destroy() })
	add := func(tp *cube.Topology, name string) error {
		return tp.AddCube(&cube.Cube{Name: name, Type: "portfwd", Hook: datapath.XDP})
	}
	if err := e.Update(func(tp *cube.Topology) error { return add(tp, "a") }); err != nil {
		t.Fatal(err)
	}
	slot := e.slots["a"]
	if err := e.Update(func(tp *cube.Topology) error { return tp.DeleteCube("a") }); err != nil {
		t.Fatal(err)
	}
	if err := e.Update(func(tp *cube.Topology) error { return add(tp, "b") }); err != nil {
		t.Fatal(err)
	}
	if e.slots["b"] != slot {
		t.Fatalf("b has slot %d, want a's slot %d", e.slots["b"], slot)
	}
	rec := &recorder{Controller: e.cubes["b"].ctl}
	e.cubes["b"].ctl = rec
	e.punt(datapath.XDP, slot, cube.Punt{Reason: 7})
	e.punt(datapath.TC, slot, cube.Punt{Reason: 8}) // another hook: no cube
	e.punt(datapath.XDP, slot+1, cube.Punt{Reason: 9})
	if len(rec.got) != 1 || rec.got[0].Reason != 7 {
		t.Fatalf("b's controller got %+v, want the one punt for its slot and hook", rec.got)
	}
}
