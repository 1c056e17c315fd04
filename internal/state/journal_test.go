package state

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
)

// snapshot writes a state of generation 1 with cube dd (one entry) and
// opens its journal.
func snapshot(t *testing.T) (string, *Journal) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.json")
	topo := cube.NewTopology()
	topo.Cubes["dd"] = &cube.Cube{Name: "dd", Type: "ddos", Tables: map[string]map[string]json.RawMessage{
		"blacklist_src": {"198.18.0.1/32": json.RawMessage(`{"prefix":"198.18.0.1/32"}`)}}}
	if err := Save(path, &File{Gen: 1, Topology: topo, Slots: map[string]uint32{"dd": 0}}); err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournal(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return path, j
}

func put(key string) Record {
	return Record{Cube: "dd", Table: "blacklist_src", Key: key, Value: json.RawMessage(`{"prefix":"` + key + `"}`)}
}

func rows(t *testing.T, path string) (map[string]json.RawMessage, *File) {
	t.Helper()
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f.Topology.Cubes["dd"].Tables["blacklist_src"], f
}

// failingFile writes only the first n bytes of each write, then fails.
type failingFile struct {
	*os.File
	n        int
	truncErr error
}

func (f *failingFile) Write(b []byte) (int, error) {
	if len(b) > f.n {
		w, _ := f.File.Write(b[:f.n])
		return w, errors.New("no space left on device")
	}
	return f.File.Write(b)
}

func (f *failingFile) Truncate(n int64) error {
	if f.truncErr != nil {
		return f.truncErr
	}
	return f.File.Truncate(n)
}

// TestFailedAppendIsCutOff: an append that fails half written is cut off
// again: the next append is not glued to a torn line, and the journal loads
// with exactly the acknowledged changes.
func TestFailedAppendIsCutOff(t *testing.T) {
	path, j := snapshot(t)
	if err := j.Append([]Record{put("198.18.0.2/32")}); err != nil {
		t.Fatal(err)
	}
	real := j.f.(*os.File)
	j.f = &failingFile{File: real, n: 30}
	if err := j.Append([]Record{put("198.18.0.3/32"), put("198.18.0.4/32")}); err == nil {
		t.Fatal("failing write acknowledged")
	}
	j.f = real
	if err := j.Append([]Record{put("198.18.0.5/32")}); err != nil {
		t.Fatal(err)
	}
	got, f := rows(t, path)
	if len(got) != 3 || got["198.18.0.2/32"] == nil || got["198.18.0.5/32"] == nil || len(f.Warnings) != 0 {
		t.Fatalf("rows %v, warnings %v", got, f.Warnings)
	}
}

// TestAppendThatCannotBeUndoneStopsTheJournal: when the cut itself fails,
// the journal refuses appends (rather than writing after a torn line) until
// a snapshot resets it.
func TestAppendThatCannotBeUndoneStopsTheJournal(t *testing.T) {
	_, j := snapshot(t)
	real := j.f.(*os.File)
	j.f = &failingFile{File: real, n: 10, truncErr: errors.New("I/O error")}
	if err := j.Append([]Record{put("198.18.0.3/32")}); err == nil || !strings.Contains(err.Error(), "undoing it") {
		t.Fatalf("append: %v", err)
	}
	j.f = real
	if err := j.Append([]Record{put("198.18.0.4/32")}); err == nil || !j.Broken() {
		t.Fatalf("append after a failed cut: %v", err)
	}
	if err := j.Reset(2); err != nil || j.Broken() {
		t.Fatalf("reset: %v", err)
	}
	if err := j.Append([]Record{put("198.18.0.4/32")}); err != nil {
		t.Fatal(err)
	}
}

// TestUnfinishedAppendIsIgnoredWhole: a crash in the middle of a multi-record
// append leaves whole lines of it: none of them is applied.
func TestUnfinishedAppendIsIgnoredWhole(t *testing.T) {
	path, j := snapshot(t)
	if err := j.Append([]Record{put("198.18.0.2/32")}); err != nil {
		t.Fatal(err)
	}
	jf, _ := os.OpenFile(JournalPath(path), os.O_WRONLY|os.O_APPEND, 0)
	for _, r := range []Record{put("198.18.0.3/32"), put("198.18.0.4/32")} {
		r.Gen, r.Tx = 1, 2 // no End: the third record never made it
		b, _ := json.Marshal(r)
		jf.Write(append(b, '\n'))
	}
	jf.Close()
	got, f := rows(t, path)
	if len(got) != 2 || got["198.18.0.3/32"] != nil || len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "unfinished change of 2 records") {
		t.Fatalf("rows %v, warnings %v", got, f.Warnings)
	}
}

// TestGluedLineOfEarlierVersionsIsRecovered: journals written before
// failed appends were cut off can hold a torn record with the next one glued
// to it; the daemon starts, keeping the glued (acknowledged) record.
func TestGluedLineOfEarlierVersionsIsRecovered(t *testing.T) {
	path, _ := snapshot(t)
	legacy := `{"gen":1,"cube":"dd","table":"blacklist_src","key":"198.18.0.2/32","value":{"prefix":"198.18.0.2/32"}}` + "\n" +
		`{"gen":1,"cube":"dd","table":"blackl` +
		`{"gen":1,"cube":"dd","table":"blacklist_src","key":"198.18.0.3/32","value":{"prefix":"198.18.0.3/32"}}` + "\n" +
		`{"gen":1,"cube":"dd","table":"blacklist_src","key":"198.18.0.4/32","val`
	os.WriteFile(JournalPath(path), []byte(legacy), 0o600)
	got, f := rows(t, path)
	if len(got) != 3 || got["198.18.0.3/32"] == nil || len(f.Warnings) != 2 {
		t.Fatalf("rows %v, warnings %v", got, f.Warnings)
	}
}

// TestResidues: a journalled deletion leaves the old value as a residue (the
// kernel may still hold it), so does an intent, without changing the state.
func TestResidues(t *testing.T) {
	path, j := snapshot(t)
	del := Record{Cube: "dd", Table: "blacklist_src", Key: "198.18.0.1/32", Value: json.RawMessage("null"), Was: json.RawMessage(`{"prefix":"198.18.0.1/32"}`)}
	if err := j.Append([]Record{del}); err != nil {
		t.Fatal(err)
	}
	intent := put("198.18.0.7/32")
	intent.Intent = true
	if err := j.Append([]Record{intent}); err != nil {
		t.Fatal(err)
	}
	got, f := rows(t, path)
	if len(got) != 0 {
		t.Fatalf("rows %v", got)
	}
	if len(f.Residues) != 2 || f.Residues[0].Key != "198.18.0.1/32" || f.Residues[1].Key != "198.18.0.7/32" {
		t.Fatalf("residues %+v", f.Residues)
	}
}
