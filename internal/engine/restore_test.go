package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	_ "github.com/edgenf/edgenf/internal/nf/p4"
	"github.com/edgenf/edgenf/internal/state"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
)

var rootSeq atomic.Int32

// restartable is a config whose engine can be opened again (a restart),
// with everything removed when the test ends.
func restartable(t testing.TB) engine.Config {
	testenv.NeedRoot(t)
	cfg := engine.Config{
		PinRoot:   filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfr-%d-%d", os.Getpid(), rootSeq.Add(1))),
		StateFile: filepath.Join(t.TempDir(), "state.json"),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	t.Cleanup(func() { engine.DestroyAt(cfg) })
	return cfg
}

func update(t testing.TB, e *engine.Engine, fn func(*cube.Topology) error) {
	t.Helper()
	if err := e.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func pinnedCubes(t *testing.T, cfg engine.Config) []string {
	ents, err := os.ReadDir(filepath.Join(cfg.PinRoot, "cubes"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestEmptyStateOverPinsIsRefused: a state file emptied (or lost) while the
// kernel still runs pinned cubes does not start empty without a word: the
// daemon refuses, naming the two ways out; -adopt-empty takes one of them.
func TestEmptyStateOverPinsIsRefused(t *testing.T) {
	cfg := restartable(t)
	e := openAt(t, cfg)
	update(t, e, func(tp *cube.Topology) error { return tp.AddCube(&cube.Cube{Name: "fwd1", Type: "portfwd"}) })
	e.Close()
	for _, content := range []string{`{"version":1}`, ""} {
		os.Remove(state.JournalPath(cfg.StateFile))
		if content == "" {
			os.Remove(cfg.StateFile)
		} else {
			os.WriteFile(cfg.StateFile, []byte(content), 0o600)
		}
		_, err := engine.Open(cfg)
		if err == nil || !strings.Contains(err.Error(), "-adopt-empty") || !strings.Contains(err.Error(), "-destroy") || !strings.Contains(err.Error(), "fwd1") {
			t.Fatalf("state %q over a pinned cube: %v", content, err)
		}
	}
	if got := pinnedCubes(t, cfg); len(got) != 1 {
		t.Fatalf("the refusal touched the pins: %v", got)
	}
	cfg.AdoptEmpty = true
	e = openAt(t, cfg)
	defer e.Close()
	if got := pinnedCubes(t, cfg); len(got) != 0 || e.Topology().NumCubes() != 0 {
		t.Fatalf("-adopt-empty left %v", got)
	}
}

// TestLeftoverPinsDoNotLeakIntoANewCube: a pinned cube no state names is
// kept (and reported) at start; a new cube of its name starts from nothing,
// not from the leftover's maps.
func TestLeftoverPinsDoNotLeakIntoANewCube(t *testing.T) {
	cfg := restartable(t)
	e := openAt(t, cfg)
	update(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "keep", Type: "portfwd"}); err != nil {
			return err
		}
		return tp.AddCube(&cube.Cube{Name: "dd", Type: "ddos"})
	})
	if err := e.ChangeEntries(tenant.Admin, "dd", "blacklist_src", func(tx *engine.EntryTx) error {
		_, err := tx.Put([]byte(`{"prefix":"2001:db8::/64"}`))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	snapshotWithout := func(name string) {
		f, err := state.Load(cfg.StateFile)
		if err != nil {
			t.Fatal(err)
		}
		f.Topology.Remove(name)
		delete(f.Slots, name)
		if err := state.Save(cfg.StateFile, f); err != nil {
			t.Fatal(err)
		}
		os.Remove(state.JournalPath(cfg.StateFile))
	}
	e.Close()
	snapshotWithout("dd") // as if the daemon stopped before the snapshot that made dd
	e = openAt(t, cfg)
	defer e.Close()
	if got := pinnedCubes(t, cfg); len(got) != 2 {
		t.Fatalf("pins after the restart: %v (the leftover is kept for inspection)", got)
	}
	if n := blacklisted(t, cfg); n != 1 {
		t.Fatalf("the leftover holds %d blacklist entries, want its 1", n)
	}
	update(t, e, func(tp *cube.Topology) error { return tp.AddCube(&cube.Cube{Name: "dd", Type: "ddos"}) })
	if n := blacklisted(t, cfg); n != 0 {
		t.Fatalf("the new cube dd starts with %d blacklist entries of the leftover", n)
	}
}

// blacklisted counts the source blacklist entries in the kernel maps of
// cube dd.
func blacklisted(t *testing.T, cfg engine.Config) int {
	t.Helper()
	n := 0
	for _, name := range []string{"dd_src_exact", "dd_src_lpm"} {
		m, err := ebpf.LoadPinnedMap(filepath.Join(cfg.PinRoot, "cubes", "dd", name), nil)
		if err != nil {
			t.Fatal(err)
		}
		var k, v []byte
		it := m.Iterate()
		for it.Next(&k, &v) {
			n++
		}
		m.Close()
	}
	return n
}

// TestCubeThatFailsToRestoreIsDown: a cube whose program no longer compiles
// is restored down, with the reason, while the others come up; it refuses
// what needs its program, still counts, and comes up when fixed.
func TestCubeThatFailsToRestoreIsDown(t *testing.T) {
	cfg := restartable(t)
	e := openAt(t, cfg)
	src, err := os.ReadFile("../../examples/p4/l2switch.p4")
	if err != nil {
		t.Fatal(err)
	}
	config := func(source string) []byte {
		return []byte(fmt.Sprintf(`{"program":"l2switch.p4","source":%q}`, source))
	}
	update(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "sw", Type: "p4", Hook: datapath.XDP, Config: config(string(src))}); err != nil {
			return err
		}
		if err := tp.AddPort("sw", cube.Port{Name: "p1", Index: 1}); err != nil {
			return err
		}
		if err := tp.AddCube(&cube.Cube{Name: "fwd", Type: "portfwd"}); err != nil {
			return err
		}
		if err := tp.AddPort("fwd", cube.Port{Name: "p0", Index: 0}); err != nil {
			return err
		}
		return tp.AddPort("fwd", cube.Port{Name: "p1", Index: 1, Peer: "sw:p1"})
	})
	e.Close()
	// the program no longer compiles (an upgrade made the compiler stricter, say)
	f, err := state.Load(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	f.Topology.Lookup("sw").Config = config(strings.Replace(string(src), "apply {", "apply { no_such_action();", 1))
	f.Gen++ // a snapshot newer than the journal (which holds the cubes as they were)
	if err := state.Save(cfg.StateFile, f); err != nil {
		t.Fatal(err)
	}
	e = openAt(t, cfg)
	defer e.Close()
	sw, _ := e.Cube(tenant.Admin, "sw")
	fwd, _ := e.Cube(tenant.Admin, "fwd")
	if sw.Down == "" || !strings.Contains(sw.Down, "no_such_action") || fwd.Down != "" {
		t.Fatalf("sw down %q, fwd down %q", sw.Down, fwd.Down)
	}
	if t2 := e.Topology(); t2.Lookup("sw").Down == "" {
		t.Fatal("the topology does not show sw down")
	}
	if _, err := e.View(tenant.Admin, "sw", "p4info"); !errors.Is(err, cube.ErrConflict) || !strings.Contains(err.Error(), "down") {
		t.Fatalf("view of a down cube: %v", err)
	}
	// frames sent to it are dropped, and counted
	if err := e.Inject(tenant.Admin, "fwd", "p1", make([]byte, 60), true); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		st, err := e.Stats(tenant.Admin, "sw")
		if err != nil {
			t.Fatalf("stats of a down cube: %v", err)
		}
		if st.Total.DropPackets == 1 {
			break
		}
		if i == 100 {
			t.Fatalf("the down cube did not count the frame sent to it: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// other changes go on; a state snapshot keeps sw's settings as they are
	update(t, e, func(tp *cube.Topology) error { return tp.AddCube(&cube.Cube{Name: "fwd2", Type: "portfwd"}) })
	if g, _ := state.Load(cfg.StateFile); sourceOf(g.Topology.Lookup("sw")) != sourceOf(f.Topology.Lookup("sw")) {
		t.Fatal("the snapshot lost the down cube's settings")
	}
	// a fix that still does not compile fails and leaves it down
	if err := e.Update(func(tp *cube.Topology) error { return tp.SetConfig("sw", config("control x {")) }); err == nil {
		t.Fatal("a broken program accepted")
	}
	if sw, _ := e.Cube(tenant.Admin, "sw"); sw.Down == "" {
		t.Fatal("sw came up on a broken program")
	}
	update(t, e, func(tp *cube.Topology) error { return tp.SetConfig("sw", config(string(src))) })
	if sw, _ := e.Cube(tenant.Admin, "sw"); sw.Down != "" {
		t.Fatalf("sw still down after the fix: %s", sw.Down)
	}
	if _, err := e.View(tenant.Admin, "sw", "p4info"); err != nil {
		t.Fatal(err)
	}
}

func sourceOf(c *cube.Cube) string {
	var set struct{ Source string }
	json.Unmarshal(c.Config, &set)
	return set.Source
}

// The daemon trusts its state file at the next start and writes its
// journal in place: a state file or journal another user could change, or
// a symbolic link (the daemon would write where it points), is refused
// before anything is loaded, and the file pointed at is left as it was.
func TestOpenRefusesStateFilesOthersControl(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("host file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, setup := range map[string]func(cfg engine.Config) error{
		"state file a symbolic link": func(cfg engine.Config) error { return os.Symlink(victim, cfg.StateFile) },
		"journal a symbolic link":    func(cfg engine.Config) error { return os.Symlink(victim, state.JournalPath(cfg.StateFile)) },
		"state file writable by all": func(cfg engine.Config) error {
			if err := os.WriteFile(cfg.StateFile, []byte(`{"version":1}`), 0o600); err != nil {
				return err
			}
			return os.Chmod(cfg.StateFile, 0o666)
		},
		"state directory of another user": func(cfg engine.Config) error { return os.Chown(filepath.Dir(cfg.StateFile), 65534, 65534) },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := restartable(t)
			if err := setup(cfg); err != nil {
				t.Fatal(err)
			}
			e, err := engine.Open(cfg)
			if err == nil {
				e.Close()
				t.Fatal("opened")
			}
			if !strings.HasPrefix(err.Error(), "state: ") {
				t.Fatalf("error does not name the state: %v", err)
			}
			if _, serr := os.Stat(cfg.PinRoot); serr == nil {
				t.Errorf("pin root created before the state was checked (%v)", err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "host file\n" {
				t.Fatalf("the linked file changed: %q", b)
			}
		})
	}
}
