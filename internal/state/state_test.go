package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	f, err := Load(path)
	if err != nil || len(f.Topology.Cubes) != 0 {
		t.Fatalf("missing file: %v %v", f, err)
	}
	f.Topology.Cubes["c1"] = &cube.Cube{Name: "c1", Type: "portfwd", Hook: "xdp"}
	f.Slots["c1"] = 3
	if err := Save(path, f); err != nil {
		t.Fatal(err)
	}
	g, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Topology.Cubes["c1"].Type != "portfwd" || g.Slots["c1"] != 3 {
		t.Fatalf("round trip lost data: %+v", g)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
}

func TestLoadRejectsCorruptAndFutureFiles(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{not json"), 0o600)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupt file: %v", err)
	}
	future := filepath.Join(dir, "future.json")
	os.WriteFile(future, []byte(`{"version": 99}`), 0o600)
	if _, err := Load(future); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("future file: %v", err)
	}
}

func TestSavePartsWritesWhatSaveWrites(t *testing.T) {
	dir := t.TempDir()
	topo := cube.NewTopology()
	topo.Cubes["b"] = &cube.Cube{Name: "b", Type: "portfwd", Hook: "xdp", Ports: []cube.Port{{Name: "p0", Peer: "a:p0"}}}
	topo.Cubes["a"] = &cube.Cube{Name: "a", Type: "portfwd", Hook: "tc"}
	topo.Attachments["b:p0"] = []string{"m"}
	slots := map[string]uint32{"a": 1, "b": 0}
	whole, parts := filepath.Join(dir, "whole.json"), filepath.Join(dir, "parts.json")
	if err := Save(whole, &File{Topology: topo, Slots: slots}); err != nil {
		t.Fatal(err)
	}
	raw := map[string]json.RawMessage{}
	for n, c := range topo.Cubes {
		raw[n], _ = json.Marshal(c)
	}
	if err := SaveParts(parts, raw, topo.Attachments, slots); err != nil {
		t.Fatal(err)
	}
	x, _ := os.ReadFile(whole)
	y, _ := os.ReadFile(parts)
	if string(x) != string(y) {
		t.Fatalf("differ:\n%s\n%s", x, y)
	}
}
