package engine_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	_ "github.com/edgenf/edgenf/internal/nf/lb"
	_ "github.com/edgenf/edgenf/internal/nf/upf"
	"github.com/edgenf/edgenf/internal/state"
	"github.com/edgenf/edgenf/internal/tenant"
)

// syncBuffer is a log sink safe for the engine's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUpgradeReloadsAStalePinnedProgram: a daemon started over a cube whose
// pinned program was built from another object (an upgraded compiler or NF,
// here portfwd.p4 whose table grew and whose action now also rewrites the
// source MAC) does not adopt it: the cube runs the current object, its
// table is written again from the state (the table's map changed layout and
// was reset, which the log says), its counters (same layout) keep counting.
// A start with nothing changed adopts without a reload.
func TestUpgradeReloadsAStalePinnedProgram(t *testing.T) {
	cfg := restartable(t)
	src, err := os.ReadFile("../../examples/p4/portfwd.p4")
	if err != nil {
		t.Fatal(err)
	}
	a := string(src)
	b := strings.Replace(a, "size = 64;", "size = 128;", 1)
	b = strings.Replace(b, "standard_metadata.egress_spec = port;", "standard_metadata.egress_spec = port; hdr.ethernet.srcAddr = 0x02000000b0b0;", 1)
	if a == b || strings.Count(b, "0x02000000b0b0") != 1 || !strings.Contains(b, "size = 128;") {
		t.Fatal("portfwd.p4 changed: the test's edit no longer applies")
	}
	config := func(source string) []byte {
		return []byte(fmt.Sprintf(`{"program":"portfwd.p4","source":%q}`, source))
	}
	e := openAt(t, cfg)
	update(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "pf", Type: "p4", Hook: datapath.XDP, Config: config(a)}); err != nil {
			return err
		}
		if err := tp.AddPort("pf", cube.Port{Name: "p0", Index: 0}); err != nil {
			return err
		}
		if err := tp.AddCube(&cube.Cube{Name: "sink", Type: "portfwd"}); err != nil {
			return err
		}
		if err := tp.AddPort("sink", cube.Port{Name: "p0", Index: 0}); err != nil {
			return err
		}
		return tp.AddPort("pf", cube.Port{Name: "p1", Index: 1, Peer: "sink:p0"})
	})
	if err := e.ChangeEntries(tenant.Admin, "pf", "entries", func(tx *engine.EntryTx) error {
		_, err := tx.Put(json.RawMessage(`{"table":"fwd","match":{"standard_metadata.ingress_port":"0"},"action":"forward","params":{"port":"1"}}`))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 60)
	copy(frame, []byte{0x02, 0, 0, 0, 0, 0xd, 0x02, 0, 0, 0, 0, 0xa, 0x08, 0x00})
	run := func(e *engine.Engine, wantSrc []byte) {
		t.Helper()
		res, err := e.RunCube("pf", 0, frame)
		if err != nil {
			t.Fatal(err)
		}
		if res.Port != 1 || !bytes.Equal(res.Data[6:12], wantSrc) {
			t.Fatalf("frame went to port %d (verdict %d) with source %x, want port 1 and %x", res.Port, res.Verdict, res.Data[6:12], wantSrc)
		}
	}
	rxCount := func(e *engine.Engine) uint64 {
		t.Helper()
		v, err := e.View(tenant.Admin, "pf", "counters")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(v)
		var cs []struct {
			Counter string
			Index   uint32
			Packets uint64
		}
		json.Unmarshal(raw, &cs)
		for _, c := range cs {
			if strings.HasSuffix(c.Counter, "rx_counter") && c.Index == 0 {
				return c.Packets
			}
		}
		return 0
	}
	run(e, frame[6:12])
	if n := rxCount(e); n != 1 {
		t.Fatalf("rx_counter[0] = %d before the upgrade", n)
	}
	e.Close()

	// the upgrade: the same state now builds another object
	f, err := state.Load(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	f.Topology.Lookup("pf").Config = config(b)
	f.Gen++ // a snapshot newer than the journal
	if err := state.Save(cfg.StateFile, f); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e = openAt(t, cfg)
	if got := e.Started(); got.Reloaded != 1 || got.Adopted != 1 || got.MapsReset != 1 {
		t.Fatalf("start %+v, want the cube reloaded with one map reset", got)
	}
	if l := logs.String(); !strings.Contains(l, "reloaded in place") || !strings.Contains(l, "cube=pf") || !strings.Contains(l, "map reset by the reload") || !strings.Contains(l, "MaxEntries: 64 changed to 128") {
		t.Fatalf("the log does not say what the upgrade did:\n%s", l)
	}
	run(e, []byte{0x02, 0, 0, 0, 0xb0, 0xb0})
	if n := rxCount(e); n != 2 {
		t.Fatalf("rx_counter[0] = %d after the upgrade, want 2 (kept, same layout)", n)
	}
	e.Close()

	// nothing changed: adopted as it is, no reload
	logs = &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e = openAt(t, cfg)
	if got := e.Started(); got != (engine.StartReport{Adopted: 2}) {
		t.Fatalf("start %+v, want the cube adopted", got)
	}
	if l := logs.String(); strings.Contains(l, "reloaded") {
		t.Fatalf("an unchanged cube was reloaded:\n%s", l)
	}
	run(e, []byte{0x02, 0, 0, 0, 0xb0, 0xb0})
	e.Close()

	// a pin without a digest (an older edgenf's) is reloaded, maps kept
	if err := os.Remove(filepath.Join(cfg.PinRoot, "cubes", "pf", "enf-digest")); err != nil {
		t.Fatal(err)
	}
	logs = &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e = openAt(t, cfg)
	defer e.Close()
	if got := e.Started(); got != (engine.StartReport{Adopted: 1, Reloaded: 1}) {
		t.Fatalf("start %+v, want the cube reloaded, no map reset", got)
	}
	if l := logs.String(); !strings.Contains(l, "no digest is recorded") {
		t.Fatalf("the log does not say why:\n%s", l)
	}
	run(e, []byte{0x02, 0, 0, 0, 0xb0, 0xb0})
	if n := rxCount(e); n != 4 {
		t.Fatalf("rx_counter[0] = %d, want 4", n)
	}
}

// TestReloadOfTheSameObjectKeepsEveryMap: pins without a digest (an edgenf
// that recorded none) are reloaded once; built from the same objects,
// every map fits and is kept, maps of maps (the lb's Maglev tables) with
// their inner maps, a upf's maps sized for its max_sessions, and nothing is
// reported reset. The next start adopts.
func TestReloadOfTheSameObjectKeepsEveryMap(t *testing.T) {
	cfg := restartable(t)
	e := openAt(t, cfg)
	update(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "lb1", Type: "lb", Hook: datapath.XDP,
			Ports: []cube.Port{{Name: "front", Index: 0}, {Name: "b1", Index: 1}}}); err != nil {
			return err
		}
		if _, err := tp.PutEntry("lb1", "services", json.RawMessage(`{"vip":"198.18.9.100","port":80,"table_size":251,
			"backends":[{"name":"z","address":"198.18.2.12","mac":"02:00:00:00:be:02","port":"b1"}]}`)); err != nil {
			return err
		}
		if err := tp.AddCube(&cube.Cube{Name: "u1", Type: "upf", Hook: datapath.TC}); err != nil {
			return err
		}
		if err := tp.AddCube(&cube.Cube{Name: "u2", Type: "upf", Config: json.RawMessage(`{"max_sessions":1024}`)}); err != nil {
			return err
		}
		return tp.AddCube(&cube.Cube{Name: "pf", Type: "portfwd"})
	})
	e.Close()
	for _, c := range []string{"lb1", "u1", "u2", "pf"} {
		if err := os.Remove(filepath.Join(cfg.PinRoot, "cubes", c, "enf-digest")); err != nil {
			t.Fatal(err)
		}
	}
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e = openAt(t, cfg)
	if got := e.Started(); got != (engine.StartReport{Reloaded: 4}) {
		t.Fatalf("start %+v, want 4 cubes reloaded and no map reset:\n%s", got, logs)
	}
	e.Close()
	e = openAt(t, cfg)
	defer e.Close()
	if got := e.Started(); got != (engine.StartReport{Adopted: 4}) {
		t.Fatalf("start %+v, want 4 cubes adopted", got)
	}
	m, err := ebpf.LoadPinnedMap(filepath.Join(cfg.PinRoot, "cubes", "u2", "upf_teid_slots"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.MaxEntries() != 1024 {
		t.Fatalf("the adopted upf of 1,024 sessions has %d TEID slots", m.MaxEntries())
	}
}

// TestRestartAfterDownRunsTheCube: a cube down at one start has its
// stand-in pinned as its program; restarted over a state that restores it,
// the daemon must not adopt the stand-in as the cube (it would drop every
// frame while the cube shows up): a stand-in records no digest, so the
// cube is reloaded and forwards.
func TestRestartAfterDownRunsTheCube(t *testing.T) {
	cfg := restartable(t)
	src, err := os.ReadFile("../../examples/p4/portfwd.p4")
	if err != nil {
		t.Fatal(err)
	}
	config := func(source string) []byte {
		return []byte(fmt.Sprintf(`{"program":"portfwd.p4","source":%q}`, source))
	}
	e := openAt(t, cfg)
	update(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "pf", Type: "p4", Hook: datapath.XDP, Config: config(string(src))}); err != nil {
			return err
		}
		if err := tp.AddCube(&cube.Cube{Name: "sink", Type: "portfwd"}); err != nil {
			return err
		}
		if err := tp.AddPort("sink", cube.Port{Name: "p0", Index: 0}); err != nil {
			return err
		}
		if err := tp.AddPort("pf", cube.Port{Name: "p0", Index: 0}); err != nil {
			return err
		}
		return tp.AddPort("pf", cube.Port{Name: "p1", Index: 1, Peer: "sink:p0"})
	})
	if err := e.ChangeEntries(tenant.Admin, "pf", "entries", func(tx *engine.EntryTx) error {
		_, err := tx.Put(json.RawMessage(`{"table":"fwd","match":{"standard_metadata.ingress_port":"0"},"action":"forward","params":{"port":"1"}}`))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	setSource := func(source string) {
		f, err := state.Load(cfg.StateFile)
		if err != nil {
			t.Fatal(err)
		}
		f.Topology.Lookup("pf").Config = config(source)
		f.Gen++
		if err := state.Save(cfg.StateFile, f); err != nil {
			t.Fatal(err)
		}
	}
	setSource(strings.Replace(string(src), "apply {", "apply { no_such_action();", 1))
	e = openAt(t, cfg)
	if pf, _ := e.Cube(tenant.Admin, "pf"); pf.Down == "" {
		t.Fatal("pf is not down on a program that does not compile")
	}
	e.Close()
	setSource(string(src))
	e = openAt(t, cfg)
	defer e.Close()
	if pf, _ := e.Cube(tenant.Admin, "pf"); pf.Down != "" {
		t.Fatalf("pf still down: %s", pf.Down)
	}
	frame := make([]byte, 60)
	copy(frame, []byte{0x02, 0, 0, 0, 0, 0xd, 0x02, 0, 0, 0, 0, 0xa, 0x08, 0x00})
	res, err := e.RunCube("pf", 0, frame)
	if err != nil {
		t.Fatal(err)
	}
	if res.Port != 1 {
		t.Fatalf("the restored cube sent the frame to port %d (verdict %d): it runs its stand-in", res.Port, res.Verdict)
	}
}
