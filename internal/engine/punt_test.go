package engine

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/testenv"
)

// recorder is a controller that passes on the punts it is handed.
type recorder struct {
	cube.Controller
	got chan cube.Punt
}

func (r *recorder) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) { r.got <- p }

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
	rec := &recorder{Controller: e.cubes["b"].ctl, got: make(chan cube.Punt, 8)}
	e.mu.Lock()
	e.cubes["b"].ctl = rec
	e.mu.Unlock()
	e.punt(datapath.XDP, slot, cube.Punt{Reason: 7})
	e.punt(datapath.TC, slot, cube.Punt{Reason: 8}) // another hook: no cube
	e.punt(datapath.XDP, slot+1, cube.Punt{Reason: 9})
	e.punt(datapath.XDP, slot, cube.Punt{Reason: 10})
	// b's worker hands them over in order: 7, then 10, and nothing else
	for _, want := range []uint32{7, 10} {
		select {
		case p := <-rec.got:
			if p.Reason != want {
				t.Fatalf("b's controller got reason %d, want %d (the punts for its slot and hook, in order)", p.Reason, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("b's controller never got the punt of reason %d", want)
		}
	}
}
