package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/tenant"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	f, err := Load(path)
	if err != nil || f.Topology.NumCubes() != 0 {
		t.Fatalf("missing file: %v %v", f, err)
	}
	f.Topology.Put(&cube.Cube{Name: "c1", Type: "portfwd", Hook: "xdp"})
	f.Slots["c1"] = 3
	if err := Save(path, f); err != nil {
		t.Fatal(err)
	}
	g, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Topology.Lookup("c1").Type != "portfwd" || g.Slots["c1"] != 3 {
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
	topo.Put(&cube.Cube{Name: "b", Type: "portfwd", Hook: "xdp", Ports: []cube.Port{{Name: "p0", Peer: "a:p0"}}})
	topo.Put(&cube.Cube{Name: "a", Type: "portfwd", Hook: "tc"})
	topo.Attachments["b:p0"] = []string{"m"}
	slots := map[string]uint32{"a": 1, "b": 0}
	tenants := map[string]*tenant.Tenant{"red": {Name: "red", Interfaces: []string{"veth0"}, Quota: tenant.Quota{tenant.Cubes: 3}}}
	endpoints := map[string]*endpoint.Endpoint{"enf0123456789ab": {Name: "enf0123456789ab", Tenant: "red", Cube: "b", Interface: "enf0123456789ab",
		ContainerID: "c1", Pod: &endpoint.Pod{Namespace: "red", Name: "web-0"}}}
	whole, parts := filepath.Join(dir, "whole.json"), filepath.Join(dir, "parts.json")
	if err := Save(whole, &File{Gen: 7, Topology: topo, Slots: slots, Tenants: tenants, Endpoints: endpoints}); err != nil {
		t.Fatal(err)
	}
	raw := map[string]json.RawMessage{}
	for n, c := range topo.Cubes() {
		raw[n], _ = json.Marshal(c)
	}
	if err := SaveParts(parts, 7, raw, topo.Attachments, slots, tenants, endpoints); err != nil {
		t.Fatal(err)
	}
	x, _ := os.ReadFile(whole)
	y, _ := os.ReadFile(parts)
	if string(x) != string(y) {
		t.Fatalf("differ:\n%s\n%s", x, y)
	}
	if f, err := Load(parts); err != nil || f.Tenants["red"].Quota[tenant.Cubes] != 3 || !f.Tenants["red"].Owns("veth0") {
		t.Fatalf("tenants not kept: %v %+v", err, f.Tenants)
	}
	if f, err := Load(parts); err != nil || !f.Endpoints["enf0123456789ab"].Equal(endpoints["enf0123456789ab"]) {
		t.Fatalf("endpoints not kept: %v %+v", err, f.Endpoints)
	}
}

// A snapshot plus its journal loads as the snapshot with the journal's
// changes applied, in order; records of an older generation and a torn last
// line (a crash during an append) are skipped.
func TestJournalReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	topo := cube.NewTopology()
	topo.Put(&cube.Cube{Name: "dd", Type: "ddos", Tables: map[string]map[string]json.RawMessage{
		"blacklist_src": {"198.18.0.1/32": json.RawMessage(`{"prefix":"198.18.0.1/32"}`)}}})
	if err := Save(path, &File{Gen: 2, Topology: topo, Slots: map[string]uint32{"dd": 0}}); err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournal(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	put := func(key string) Record {
		return Record{Cube: "dd", Table: "blacklist_src", Key: key, Value: json.RawMessage(`{"prefix":"` + key + `"}`)}
	}
	if err := j.Append([]Record{put("198.18.0.2/32"), put("198.18.0.3/32")}); err != nil {
		t.Fatal(err)
	}
	if err := j.Append([]Record{{Cube: "dd", Table: "blacklist_src", Key: "198.18.0.1/32"}}); err != nil {
		t.Fatal(err)
	}
	jf, _ := os.OpenFile(JournalPath(path), os.O_WRONLY|os.O_APPEND, 0)
	jf.WriteString(`{"gen":1,"cube":"dd","table":"blacklist_src","key":"198.18.0.9/32","value":{}}` + "\n")
	jf.WriteString(`{"gen":2,"cube":"dd","table":"blackl`)
	jf.Close()
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := f.Topology.Lookup("dd").Tables["blacklist_src"]
	if len(rows) != 2 || rows["198.18.0.2/32"] == nil || rows["198.18.0.3/32"] == nil {
		t.Fatalf("after replay: %v", rows)
	}

	// A bad line that is not the last one is corruption, not a torn write.
	jf, _ = os.OpenFile(JournalPath(path), os.O_WRONLY|os.O_APPEND, 0)
	jf.WriteString("\n" + `{"gen":2}` + "\n")
	jf.Close()
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "corrupt at line 5") {
		t.Fatalf("corrupt journal: %v", err)
	}

	// A new snapshot generation supersedes the journal.
	if err := j.Reset(3); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, &File{Gen: 3, Topology: topo}); err != nil {
		t.Fatal(err)
	}
	if f, err = Load(path); err != nil || len(f.Topology.Lookup("dd").Tables["blacklist_src"]) != 1 {
		t.Fatalf("after reset: %v %v", err, f.Topology.Lookup("dd").Tables)
	}
}

// Endpoint records replay with the cube records of their transaction.
func TestJournalReplaysEndpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	topo := cube.NewTopology()
	topo.Put(&cube.Cube{Name: "br", Type: "bridge"})
	ep := &endpoint.Endpoint{Name: "enf0000000000a1", Cube: "br", Interface: "enf0000000000a1"}
	if err := Save(path, &File{Gen: 1, Topology: topo, Endpoints: map[string]*endpoint.Endpoint{"old": {Name: "old", Cube: "br", Interface: "old"}}}); err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournal(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	withPort := json.RawMessage(`{"name":"br","type":"bridge","ports":[{"name":"enf0000000000a1","peer":"enf0000000000a1"}]}`)
	if err := j.Append([]Record{CubeRecord("br", withPort, 0), EndpointRecord(ep.Name, ep), EndpointRecord("old", nil)}); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Endpoints) != 1 || !f.Endpoints[ep.Name].Equal(ep) || f.Topology.Lookup("br").Port(ep.Name) == nil {
		t.Fatalf("after replay: endpoints %v, cube %+v", f.Endpoints, f.Topology.Lookup("br"))
	}
	// A record naming another endpoint than its key is corruption.
	if err := j.Append([]Record{{Kind: KindEndpoint, Key: "x", Value: json.RawMessage(`{"name":"y"}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), `endpoint "x" holds endpoint "y"`) {
		t.Fatalf("mismatched endpoint record: %v", err)
	}
}
