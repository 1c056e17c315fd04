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
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/state"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
)

// ddosEngine opens an engine with its own pins (prefix-<pid>) and state,
// destroyed when the test ends, running one ddos cube "dd".
func ddosEngine(t *testing.T, prefix string) (*engine.Engine, engine.Config) {
	t.Helper()
	cfg := engine.Config{
		PinRoot:   filepath.Join("/sys/fs/bpf", fmt.Sprintf("%s-%d", prefix, os.Getpid())),
		StateFile: filepath.Join(t.TempDir(), "state.json"),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	e := openAt(t, cfg)
	t.Cleanup(func() { engine.DestroyAt(cfg) })
	if err := e.Update(func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "dd", Type: "ddos"})
	}); err != nil {
		t.Fatal(err)
	}
	return e, cfg
}

func openAt(t testing.TB, cfg engine.Config) *engine.Engine {
	t.Helper()
	testenv.NeedRoot(t)
	e, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Entry changes go to the journal, survive a restart (a killed daemon
// included: nothing is flushed on Close) and fold into the next snapshot;
// a refused change leaves table, journal and kernel as they were.
func TestChangeEntriesJournalAndRestart(t *testing.T) {
	e, cfg := ddosEngine(t, "enfj")
	put := func(prefix string) error {
		return e.ChangeEntries(tenant.Admin, "dd", "blacklist_src", func(tx *engine.EntryTx) error {
			_, err := tx.Put(json.RawMessage(fmt.Sprintf(`{"prefix":%q}`, prefix)))
			return err
		})

	}
	for _, p := range []string{"198.18.0.1/32", "198.18.0.2/32", "2001:db8::/64"} {
		if err := put(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.ChangeEntries(tenant.Admin, "dd", "blacklist_src", func(tx *engine.EntryTx) error { return tx.Delete("198.18.0.2/32") }); err != nil {
		t.Fatal(err)
	}
	snap, _ := os.ReadFile(cfg.StateFile)
	if strings.Contains(string(snap), "198.18.0.1") {
		t.Fatalf("an entry change rewrote the snapshot")
	}

	// Refused: the second entry of the change is invalid; the first must
	// not stay either.
	jsize := func() int64 { st, _ := os.Stat(state.JournalPath(cfg.StateFile)); return st.Size() }
	before := jsize()
	err := e.ChangeEntries(tenant.Admin, "dd", "blacklist_src", func(tx *engine.EntryTx) error {
		if _, err := tx.Put(json.RawMessage(`{"prefix":"198.18.0.7/32"}`)); err != nil {
			return err
		}
		_, err := tx.Put(json.RawMessage(`{"prefix":"198.18.0.300/32"}`))
		return err
	})

	if err == nil {
		t.Fatal("an invalid prefix was accepted")
	}
	if _, ok := e.Entry(tenant.Admin, "dd", "blacklist_src", "198.18.0.7/32"); ok || jsize() != before {
		t.Fatalf("a refused change left an entry (%v) or journal bytes (%d → %d)", ok, before, jsize())
	}
	want := []string{"198.18.0.1/32", "2001:db8::/64"}
	check := func(e *engine.Engine, when string) {
		t.Helper()
		got := e.Entries(tenant.Admin, "dd", "blacklist_src")
		if len(got) != len(want) {
			t.Fatalf("%s: entries %s", when, got)
		}
		for i, k := range want {
			if !strings.Contains(string(got[i]), k) {
				t.Fatalf("%s: entries %s, want %v", when, got, want)
			}
		}
	}
	check(e, "before restart")

	e.Close() // as a killed daemon: no snapshot on the way out
	e = openAt(t, cfg)
	check(e, "after restart")
	if jsize() != 0 {
		t.Fatalf("the restart did not fold the journal into a snapshot")
	}
	e.Close()
}

// TestInsertNeverReplaces: Insert adds a new key, refuses one already in
// the table (or staged earlier in the same change) with an
// *EntryExistsError that is a conflict, and a refused change leaves the
// table as it was; Table resolves the tables the cube's type has.
func TestInsertNeverReplaces(t *testing.T) {
	e, _ := ddosEngine(t, "enfi")
	if tb, err := e.Table(tenant.Admin, "dd", "blacklist_src"); err != nil || tb.Name != "blacklist_src" {
		t.Fatalf("Table: %v, %v", tb, err)
	}
	if _, err := e.Table(tenant.Admin, "dd", "nosuch"); !errors.Is(err, cube.ErrNotFound) {
		t.Errorf("Table of a table the type lacks: %v", err)
	}
	insert := func(prefixes ...string) error {
		return e.ChangeEntries(tenant.Admin, "dd", "blacklist_src", func(tx *engine.EntryTx) error {
			for _, p := range prefixes {
				if _, err := tx.Insert(json.RawMessage(fmt.Sprintf(`{"prefix":%q}`, p))); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := insert("198.18.0.1/32"); err != nil {
		t.Fatal(err)
	}
	for _, batch := range [][]string{{"198.18.0.1/32"}, {"198.18.0.2/32", "198.18.0.2/32"}} {
		err := insert(batch...)
		var dup *engine.EntryExistsError
		if !errors.As(err, &dup) || !errors.Is(err, cube.ErrConflict) || !strings.Contains(err.Error(), "already has an entry") {
			t.Errorf("insert %v: %v", batch, err)
		}
	}
	if got := e.Entries(tenant.Admin, "dd", "blacklist_src"); len(got) != 1 {
		t.Errorf("entries after refused inserts: %s", got)
	}
}

// The admission check (edgenfd -core-budget-ns) sees an entry change as
// the topology before and after it (the cube as it was, changed in place,
// in Was), what differs, and the revision of the topology it changes; a
// refusal leaves the table as it was.
func TestChangeEntriesAdmission(t *testing.T) {
	var seen [][2]int // entries of dd before and after, per check
	var revs []string
	cfg := engine.Config{
		PinRoot:   filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfa-%d", os.Getpid())),
		StateFile: filepath.Join(t.TempDir(), "state.json"),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Admit: func(ch engine.AdmitChange) error {
			n := func(c *cube.Cube) int {
				if c != nil {
					return len(c.Tables["blacklist_src"])
				}
				return -1
			}
			was, ok := ch.Was["dd"]
			if !ok {
				was = ch.Prev.Lookup("dd")
			}
			seen = append(seen, [2]int{n(was), n(ch.Next.Lookup("dd"))})
			revs = append(revs, fmt.Sprint(ch.Rev, ch.Cubes))
			if n(ch.Next.Lookup("dd")) > 2 {
				return cube.Conflict("core_budget_ns", "refused: over the budget")
			}
			return nil
		},
	}
	e := openAt(t, cfg)
	t.Cleanup(func() { engine.DestroyAt(cfg) })
	if err := e.Update(func(tp *cube.Topology) error { return tp.AddCube(&cube.Cube{Name: "dd", Type: "ddos"}) }); err != nil {
		t.Fatal(err)
	}
	put := func(prefix string) error {
		return e.ChangeEntries(tenant.Admin, "dd", "blacklist_src", func(tx *engine.EntryTx) error {
			_, err := tx.Put(json.RawMessage(fmt.Sprintf(`{"prefix":%q}`, prefix)))
			return err
		})
	}
	for _, p := range []string{"198.18.0.1/32", "198.18.0.0/24"} {
		if err := put(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := put("198.18.0.0/16"); err == nil || !strings.Contains(err.Error(), "over the budget") {
		t.Fatalf("a change the admission check refuses: %v", err)
	}
	if c, _ := e.Cube(tenant.Admin, "dd"); len(c.Tables["blacklist_src"]) != 2 {
		t.Fatalf("after the refusal the table holds %d entries, want 2", len(c.Tables["blacklist_src"]))
	}
	want := [][2]int{{-1, 0}, {0, 1}, {1, 2}, {2, 3}}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("admission checks saw entries (before, after) %v, want %v", seen, want)
	}
	if want := "[0 [dd] 1 [dd] 2 [dd] 3 [dd]]"; fmt.Sprint(revs) != want {
		t.Fatalf("admission checks saw revisions and changed cubes %v, want %v", revs, want)
	}
}
