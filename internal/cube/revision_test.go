package cube_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
)

// filled is a cube with n entries in table "t".
func filled(n int) *cube.Cube {
	c := &cube.Cube{Name: "c", Type: "portfwd"}
	for k := range n {
		c.SetRow("t", fmt.Sprintf("k%d", k), json.RawMessage(fmt.Sprintf(`{"v":%d}`, k)))
	}
	return c
}

// A copy of a 1,000-entry cube that sets one entry differs from it in that
// entry, found without comparing the others: RowsSince names the one
// entry set.
func TestChangedRowsOfACopyAreTheEntriesSet(t *testing.T) {
	old := filled(1000)
	c := old.Clone()
	c.SetRow("t", "new", json.RawMessage(`{"v":-1}`))
	rows, ok := c.RowsSince(old.Version())
	if !ok || !slices.Equal(rows, []cube.Row{{Table: "t", Key: "new"}}) {
		t.Fatalf("rows set since the copy: %v %v, want the one set", rows, ok)
	}
	// set back as it was: set, but no change
	d := old.Clone()
	d.SetRow("t", "k5", old.Tables["t"]["k5"])
	if got := cube.ChangedRows(old, d); len(got) != 0 {
		t.Fatalf("an entry set to what it was: changed %v", got)
	}
}

// Whatever the copies and edits, ChangedRows finds what comparing every
// entry finds: entries set, removed, set back, tables emptied whole, in
// copies of copies, in the original after the copy, in two copies of one
// cube.
func TestChangedRowsAgreesWithTheScan(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	versions := []*cube.Cube{filled(20)}
	marks := []cube.Version{versions[0].Version()}
	snapshots := []*cube.Cube{filled(20)} // each version's entries when marked
	snap := func(c *cube.Cube) *cube.Cube {
		s := &cube.Cube{Name: c.Name, Type: c.Type}
		for name, rows := range c.Tables {
			for k, v := range rows {
				s.SetRow(name, k, v)
			}
		}
		return s
	}
	tracked := 0
	for step := range 3000 {
		c := versions[rng.Intn(len(versions))]
		switch op := rng.Intn(13); {
		case op < 3:
			n := c.Clone()
			versions, marks, snapshots = append(versions, n), append(marks, n.Version()), append(snapshots, snap(n))
		case op < 8:
			c.SetRow([]string{"t", "u"}[rng.Intn(2)], fmt.Sprintf("k%d", rng.Intn(30)), json.RawMessage(fmt.Sprintf(`{"v":%d}`, rng.Intn(3))))
		case op < 11:
			c.SetRow([]string{"t", "u"}[rng.Intn(2)], fmt.Sprintf("k%d", rng.Intn(30)), nil)
		case op == 11:
			if rng.Intn(4) == 0 {
				c.ClearTables()
			}
		default:
			i := rng.Intn(len(versions))
			marks[i], snapshots[i] = versions[i].Version(), snap(versions[i])
		}
		if len(versions) > 12 {
			versions, marks, snapshots = versions[1:], marks[1:], snapshots[1:]
		}
		a, b := rng.Intn(len(versions)), rng.Intn(len(versions))
		want := cube.ScanRows(snapshots[a], versions[b])
		rows, ok := versions[b].RowsSince(marks[a])
		if !ok {
			continue
		}
		tracked++
		var got []cube.Row
		for _, r := range rows {
			x, inA := snapshots[a].Tables[r.Table][r.Key]
			y, inB := versions[b].Tables[r.Table][r.Key]
			if inA != inB || string(x) != string(y) {
				got = append(got, r)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: versions %d → %d: the entries set give %v, the scan %v", step, a, b, got, want)
		}
	}
	if tracked < 400 {
		t.Fatalf("RowsSince answered %d of 3000 times: the test tests little", tracked)
	}
	runtime.KeepAlive(versions)
}

// A question about a cube that holds a change's rows alone (WithRows) is
// no version of the cube.
func TestAPartialCopyIsNoVersion(t *testing.T) {
	c := filled(10)
	p := c.WithRows([]cube.Row{{Table: "t", Key: "k1"}})
	if !p.Partial() || c.Partial() {
		t.Fatal("WithRows's copy is partial, the cube is not")
	}
	if _, ok := p.RowsSince(c.Version()); ok {
		t.Fatal("a partial copy answered RowsSince of its cube")
	}
}

// An entry written around SetRow into a table is not recorded, but the
// table's size tells: ChangedRows compares every entry.
func TestChangedRowsSeesATableGrownAroundSetRow(t *testing.T) {
	old := filled(100)
	c := old.Clone()
	c.SetRow("t", "k1", json.RawMessage(`{"v":-1}`))
	c.Tables["t"]["around"] = json.RawMessage(`{}`)
	c.Tables["t"]["around2"] = json.RawMessage(`{}`)
	if got := cube.ChangedRows(old, c); !slices.Equal(got, []cube.Row{{Table: "t", Key: "around"}, {Table: "t", Key: "around2"}, {Table: "t", Key: "k1"}}) {
		t.Fatalf("changed %v, want around, around2 and k1", got)
	}
}

// A cube keeps the last entries set (a upf's sessions, set in place for
// ever): a version from before them is compared entry by entry, a later
// one from what was set since.
func TestAVersionOlderThanTheEntriesKeptIsScanned(t *testing.T) {
	c := filled(10)
	old := c.Version()
	oldCopy := c.Clone()
	for k := range 3000 {
		c.SetRow("t", fmt.Sprintf("k%d", k%500), json.RawMessage(fmt.Sprintf(`{"v":%d}`, k)))
	}
	if _, ok := c.RowsSince(old); ok {
		t.Fatal("RowsSince answered for a version older than the entries kept")
	}
	if got := cube.ChangedRows(oldCopy, c); len(got) != 500 {
		t.Fatalf("changed %d entries, want 500", len(got))
	}
	v := c.Version()
	c.SetRow("t", "k7", nil)
	if rows, ok := c.RowsSince(v); !ok || !slices.Equal(rows, []cube.Row{{Table: "t", Key: "k7"}}) {
		t.Fatalf("rows set since a recent version: %v %v, want k7", rows, ok)
	}
}

// The engine sets entries in a copy that shares all but the table it sets
// (WithOwnTable) while calls without its lock read the cube: the copy
// records its own entries, the cube read is left as it was.
func TestAnOwnTableCopyRecordsItsOwnEntries(t *testing.T) {
	c := filled(100)
	v := c.Version()
	n := c.WithOwnTable("t")
	n.SetRow("t", "k3", nil)
	if got := cube.ChangedRows(c, n); !slices.Equal(got, []cube.Row{{Table: "t", Key: "k3"}}) {
		t.Fatalf("changed %v, want k3", got)
	}
	if rows, ok := c.RowsSince(v); !ok || len(rows) != 0 || len(c.Tables["t"]) != 100 {
		t.Fatalf("the cube read: rows set since %v %v, %d entries; want none, 100", rows, ok, len(c.Tables["t"]))
	}
}

// A table replaced by as many other entries (the API's PUT of a table:
// ClearTable, then each entry) differs in every entry gone and come.
func TestAClearedTableRefilledDiffersInEveryEntry(t *testing.T) {
	old := filled(3)
	c := old.Clone()
	c.ClearTable("t")
	for _, k := range []string{"a", "b", "c"} {
		c.SetRow("t", k, json.RawMessage(`{}`))
	}
	if got, want := cube.ChangedRows(old, c), cube.ScanRows(old, c); len(want) != 6 || !slices.Equal(got, want) {
		t.Fatalf("changed %v, the scan %v (6)", got, want)
	}
}
