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

// blockingSweeper is a controller whose sweep waits until released, then
// uses the map handle it got before.
type blockingSweeper struct {
	cube.Controller
	started, release chan struct{}
	done             chan error
}

func (b *blockingSweeper) Sweep(h cube.Handle, now time.Time) {
	m, err := h.Map("pf_table")
	if err != nil {
		b.done <- err
		return
	}
	close(b.started)
	<-b.release
	v := make([]byte, m.ValueSize())
	b.done <- m.Lookup(uint32(0), &v) // still a valid handle of that map
}

// TestSweepRunsOffTheLock: while a cube's sweep runs, the engine takes
// changes (here: deleting that very cube), and the sweep's map handles stay
// valid after the cube and its maps are gone.
func TestSweepRunsOffTheLock(t *testing.T) {
	testenv.NeedRoot(t)
	e, err := Open(Config{
		PinRoot:   filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfsweep-%d", os.Getpid())),
		StateFile: filepath.Join(t.TempDir(), "state.json"),
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Destroy() })
	if err := e.Update(func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "s", Type: "portfwd", Hook: datapath.XDP})
	}); err != nil {
		t.Fatal(err)
	}
	b := &blockingSweeper{started: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
	e.mu.Lock()
	b.Controller = e.cubes["s"].ctl
	e.cubes["s"].ctl = b
	e.mu.Unlock()
	go e.tick(time.Now())
	select {
	case <-b.started:
	case err := <-b.done:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("the sweep did not start")
	}
	changed := make(chan error, 1)
	go func() { changed <- e.Update(func(tp *cube.Topology) error { return tp.DeleteCube("s") }) }()
	select {
	case err := <-changed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		close(b.release)
		t.Fatal("a change waited for a sweep: the sweep holds the engine's lock")
	}
	close(b.release)
	if err := <-b.done; err != nil {
		t.Errorf("the sweep's map handle after its cube went: %v", err)
	}
}
