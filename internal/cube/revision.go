package cube

// The entries set in a cube since it was copied. A change copies the cube
// it edits (Clone) and sets an entry or two (SetRow); what differs between
// the two versions is then found from the entries set, not by comparing
// every entry of both (a slicer of 1,000 slices: ChangedRows for the
// engine, RowsSince for an index kept in step with the cube).

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"weak"
)

// revision is what a cube records of its entries' edits: the entries set
// since it was made or copied, numbered from 0 on, the last revisionMax
// of them kept.
type revision struct {
	// from is the cube this one was copied from (none: made, decoded),
	// when from had recorded fromN entries.
	from  weak.Pointer[Cube]
	fromN int
	// rows are the entries start on, in order, repeats kept.
	rows  []Row
	start int
}

// revisionMax bounds the entries a cube keeps (a cube whose entries are
// set in place, one at a time, for ever: a upf's sessions). What differs
// from a version older than those kept is found by comparing every entry.
const revisionMax = 1024

// n is how many entries were recorded.
func (r *revision) n() int {
	if r == nil {
		return 0
	}
	return r.start + len(r.rows)
}

// copied is the revision of a copy of c made now.
func (c *Cube) copied() *revision {
	return &revision{from: weak.Make(c), fromN: c.rev.n()}
}

// note records that entry key of table was set.
func (c *Cube) note(table, key string) {
	if c.rev == nil {
		c.rev = &revision{}
	}
	r := c.rev
	if len(r.rows) == revisionMax {
		r.start, r.rows = r.n(), nil
	}
	r.rows = append(r.rows, Row{table, key})
}

// forget makes the entries' edits up to now unknown (the tables replaced
// whole): a version older than now is compared entry by entry.
func (c *Cube) forget() {
	if c.rev == nil {
		c.rev = &revision{}
	}
	c.rev.start, c.rev.rows = c.rev.n()+1, nil
}

// Version names a cube as it is now: RowsSince lists the entries that
// may differ from it.
type Version struct {
	c weak.Pointer[Cube]
	// n are the entries the cube had recorded.
	n int
	// sizes are its tables' sizes, by table.
	sizes map[string]int
}

// Version names c as it is now.
func (c *Cube) Version() Version {
	v := Version{c: weak.Make(c), sizes: make(map[string]int, len(c.Tables))}
	v.n = c.rev.n()
	for name, rows := range c.Tables {
		v.sizes[name] = len(rows)
	}
	return v
}

// RowsSince lists the entries of c that may differ from those of the cube
// v names as it was then (more, never fewer; each once, in order), when
// the two are versions of one another that know what was set in them:
// the same cube, a copy of the other, or two copies of one cube. ok is
// false when that is not known: compare every entry.
func (c *Cube) RowsSince(v Version) (rows []Row, ok bool) {
	a := v.c.Value()
	if a == nil || a.partial || c.partial {
		return nil, false
	}
	var parts [][]Row
	// take adds r's entries i..j-1 (j -1: to the last); false if r keeps
	// them no more.
	take := func(r *revision, i, j int) bool {
		if j < 0 {
			j = r.n()
		}
		i, j = min(i, j), max(i, j)
		if r == nil || i == j {
			return true
		}
		if i < r.start {
			return false
		}
		parts = append(parts, r.rows[i-r.start:j-r.start])
		return true
	}
	self := weak.Make(c)
	switch {
	case a == c:
		ok = take(c.rev, v.n, -1)
	case c.rev != nil && c.rev.from == v.c:
		// c copied from a: what was set in a between v and the copy, and
		// in c since
		ok = take(a.rev, v.n, c.rev.fromN) && take(c.rev, 0, -1)
	case a.rev != nil && a.rev.from == self:
		// a copied from c: what was set in a up to v, and in c since the
		// copy
		ok = take(a.rev, 0, v.n) && take(c.rev, a.rev.fromN, -1)
	case a.rev != nil && c.rev != nil && a.rev.from == c.rev.from && a.rev.from != (weak.Pointer[Cube]{}):
		// two copies of p: what was set in a up to v, in c, and in p
		// between the two copies
		p := a.rev.from.Value()
		ok = p != nil && take(a.rev, 0, v.n) && take(c.rev, 0, -1) && take(p.rev, a.rev.fromN, c.rev.fromN)
	}
	if !ok {
		return nil, false
	}
	rows = slices.Concat(parts...)
	slices.SortFunc(rows, compareRows)
	rows = slices.Compact(rows)
	// Tables replaced or entries set around SetRow: a table's size
	// changed by more than its entries set.
	set := map[string]int{}
	for _, r := range rows {
		set[r.Table]++
	}
	for name, n := range v.sizes {
		if d := len(c.Tables[name]) - n; d > set[name] || -d > set[name] {
			return nil, false
		}
	}
	for name, rows := range c.Tables {
		if _, had := v.sizes[name]; !had && len(rows) > set[name] {
			return nil, false
		}
	}
	return rows, true
}

func compareRows(a, b Row) int {
	return cmp.Or(strings.Compare(a.Table, b.Table), strings.Compare(a.Key, b.Key))
}

// ChangedRows lists, in order, the entries that differ between old and c:
// added, changed or removed. Where c and old are versions of one another
// that know what was set in them (RowsSince), only those entries are
// compared (one of a thousand); else every entry is (ScanRows).
func ChangedRows(old, c *Cube) []Row {
	rows, ok := c.RowsSince(old.Version())
	if !ok {
		return ScanRows(old, c)
	}
	return slices.DeleteFunc(rows, func(r Row) bool {
		a, inOld := old.Tables[r.Table][r.Key]
		b, inNew := c.Tables[r.Table][r.Key]
		return inOld == inNew && bytes.Equal(a, b)
	})
}

// ScanRows is ChangedRows by comparing every entry of both. An entry is
// never changed in place and a copy of a cube shares its entries (Clone),
// so an entry a change did not touch is the same bytes in both and
// compares at once: the scan reads the tables, decodes nothing.
func ScanRows(old, c *Cube) []Row {
	var out []Row
	for name, rows := range c.Tables {
		before := old.Tables[name]
		for k, v := range rows {
			if w, ok := before[k]; !ok || !bytes.Equal(v, w) {
				out = append(out, Row{name, k})
			}
		}
	}
	for name, rows := range old.Tables {
		after := c.Tables[name]
		for k := range rows {
			if _, ok := after[k]; !ok {
				out = append(out, Row{name, k})
			}
		}
	}
	slices.SortFunc(out, compareRows)
	return out
}
