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
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/tenant"
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
	e := testEngine(t, "enfsweep")
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

type nopController struct{}

func (nopController) Sync(cube.Handle, *cube.Cube) error { return nil }

// slowView is what the one view of the NF type "slowview" waits on:
// Unlocked, it signals started, waits to be released, then reads a map of
// its cube. Each test run makes its own channels (go test -count=N).
var slowView struct{ started, release chan struct{} }

func init() {
	cube.Register(&cube.Type{
		Name: "slowview", Description: "test: an Unlocked view that waits", Hooks: []datapath.Hook{datapath.XDP},
		Object: portfwd.Type.Object,
		Views: []cube.View{{Name: "slow", Item: &struct{}{}, Object: true, Unlocked: true,
			List: func(h cube.Handle, c *cube.Cube) (any, error) {
				close(slowView.started)
				<-slowView.release
				m, err := h.Map("pf_table")
				if err != nil {
					return nil, err
				}
				v := make([]byte, m.ValueSize())
				return c.Name, m.Lookup(uint32(0), &v)
			}}},
		New: func() cube.Controller { return nopController{} },
	})
}

// TestUnlockedViewRunsOffTheLock: while an Unlocked view of a cube runs, the
// engine takes changes (deleting that cube), and the view's map handles
// stay valid.
func TestUnlockedViewRunsOffTheLock(t *testing.T) {
	slowView.started, slowView.release = make(chan struct{}), make(chan struct{})
	e := testEngine(t, "enfview")
	if err := e.Update(func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "v", Type: "slowview", Hook: datapath.XDP})
	}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		v   any
		err error
	}
	viewed := make(chan result, 1)
	go func() {
		v, err := e.View(tenant.Admin, "v", "slow")
		viewed <- result{v, err}
	}()
	select {
	case <-slowView.started:
	case r := <-viewed:
		t.Fatalf("the view ended at once: %v %v", r.v, r.err)
	}
	changed := make(chan error, 1)
	go func() { changed <- e.Update(func(tp *cube.Topology) error { return tp.DeleteCube("v") }) }()
	select {
	case err := <-changed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		close(slowView.release)
		t.Fatal("a change waited for a view: the view holds the engine's lock")
	}
	close(slowView.release)
	if r := <-viewed; r.err != nil || r.v != "v" {
		t.Errorf("the view after its cube went: %v, %v", r.v, r.err)
	}
}

// testEngine opens an engine with its own pins (prefix-<pid>) and state,
// destroyed when the test ends.
func testEngine(t *testing.T, prefix string) *Engine {
	t.Helper()
	testenv.NeedRoot(t)
	e, err := Open(Config{
		PinRoot:   filepath.Join("/sys/fs/bpf", fmt.Sprintf("%s-%d", prefix, os.Getpid())),
		StateFile: filepath.Join(t.TempDir(), "state.json"),
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Destroy() })
	return e
}
