package engine_test

import (
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
)

// A port that stops entering a cube keeps the vacant program in its direct
// hop (datapath/vacant.go) instead of an empty entry. A daemon restarted
// over such entries (it adopts the pinned cubes, and its vacant program is
// another one) wires them again: re-peered, the hop holds the peer's
// program and enters it directly; unpeered again, it enters nothing.
func TestDirectHopsAfterRestartOverVacantEntries(t *testing.T) {
	cfg := restartable(t)
	e, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	update(t, e, func(tp *cube.Topology) error {
		for _, c := range tenantChain(0) {
			tp.Put(c)
		}
		return nil
	})
	update(t, e, func(tp *cube.Topology) error { return tp.Unpeer("t0a:p1") })
	e.Close() // the daemon stops; its cubes stay pinned
	if e, err = engine.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	open := func(path string) *ebpf.Map {
		t.Helper()
		m, err := ebpf.LoadPinnedMap(filepath.Join(cfg.PinRoot, "cubes", path), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	peers, ids := open("t0a/enf_peers"), open("t0a/enf_peer_ids")
	hop := func() (held, id uint32) {
		t.Helper()
		if err := peers.Lookup(uint32(1), &held); err != nil {
			t.Fatalf("t0a's direct hop of port 1: %v", err)
		}
		if err := ids.Lookup(uint32(1), &id); err != nil {
			t.Fatal(err)
		}
		return held, id
	}
	prog, err := ebpf.LoadPinnedProgram(filepath.Join(cfg.PinRoot, "cubes", "t0b", "prog"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := info.ID()
	want := uint32(pid)
	if held, id := hop(); held == want || id != 0 {
		t.Fatalf("unpeered before the restart: the hop holds program %d (t0b's is %d) with id %d, want another and 0", held, want, id)
	}

	update(t, e, func(tp *cube.Topology) error { return tp.SetPeer("t0a:p1", "t0b:p0") })
	if held, id := hop(); held != want || id != want {
		t.Fatalf("re-peered after the restart: the hop holds program %d with id %d, want t0b's %d for both", held, id, want)
	}
	update(t, e, func(tp *cube.Topology) error { return tp.Unpeer("t0a:p1") })
	if held, id := hop(); held == want || id != 0 {
		t.Fatalf("unpeered again: the hop holds program %d with id %d, want neither t0b's %d nor an id", held, id, want)
	}
}
