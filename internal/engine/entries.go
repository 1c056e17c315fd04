package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/state"
	"github.com/edgenf/edgenf/internal/tenant"
)

// EntryTx stages changes to the entries of one table of one cube. The
// changes take effect all together when the function given to
// ChangeEntries returns nil, or not at all.
type EntryTx struct {
	c     *cube.Cube
	tb    *cube.Table
	orig  map[string]json.RawMessage // key → value before the change (nil: absent)
	order []string                   // keys changed, first change first
	items map[string]any             // key → entry as Put last decoded it (nil: deleted)
}

// Table is the table the transaction changes.
func (tx *EntryTx) Table() *cube.Table { return tx.tb }

// Get returns an entry as staged so far.
func (tx *EntryTx) Get(key string) (json.RawMessage, bool) {
	raw, ok := tx.c.Tables[tx.tb.Name][key]
	return raw, ok
}

// Len is the number of entries as staged so far.
func (tx *EntryTx) Len() int { return len(tx.c.Tables[tx.tb.Name]) }

// Key returns the key of the entry raw describes, checking it as Put does.
func (tx *EntryTx) Key(raw json.RawMessage) (string, error) {
	_, key, err := tx.tb.DecodeEntry(tx.c, raw)
	return key, err
}

// EntryExistsError is Insert's refusal: the table already has an entry
// under the key. It is a cube.ErrConflict.
type EntryExistsError struct{ Table, Key string }

func (e *EntryExistsError) Error() string {
	return fmt.Sprintf("table %s already has an entry %q", e.Table, e.Key)
}

// Is makes the error a conflict for errors.Is (the API answers 409).
func (e *EntryExistsError) Is(target error) bool { return target == cube.ErrConflict }

// Insert adds the entry raw describes, whose key must be new (an
// *EntryExistsError otherwise: Put replaces), and returns its key. This is
// the one place of the "add never replaces" rule the API's POST and
// P4Runtime's INSERT follow.
func (tx *EntryTx) Insert(raw json.RawMessage) (string, error) {
	v, err := cube.Decode("tables."+tx.tb.Name, raw, tx.tb.Item)
	if err != nil {
		return "", err
	}
	key, err := tx.tb.CheckEntry(tx.c, v)
	if err != nil {
		return "", err
	}
	if _, dup := tx.Get(key); dup {
		return key, &EntryExistsError{tx.tb.Name, key}
	}
	return tx.PutValue(v)
}

// Put adds or replaces the entry raw describes and returns its key.
func (tx *EntryTx) Put(raw json.RawMessage) (string, error) {
	v, err := cube.Decode("tables."+tx.tb.Name, raw, tx.tb.Item)
	if err != nil {
		return "", err
	}
	return tx.PutValue(v)
}

// PutValue is Put for an entry of the table's item type, validated in
// place; it must not be changed afterwards.
func (tx *EntryTx) PutValue(v any) (string, error) {
	key, err := tx.tb.CheckEntry(tx.c, v)
	if err != nil {
		return "", err
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	tx.set(key, canon)
	tx.item(key, v)
	return key, nil
}

// Delete removes an entry.
func (tx *EntryTx) Delete(key string) error {
	if _, ok := tx.Get(key); !ok {
		return cube.NotFound("key", "table %s of %s has no entry %q", tx.tb.Name, tx.c.Name, key)
	}
	tx.set(key, nil)
	tx.item(key, nil)
	return nil
}

// item records the decoded form of the entry staged under key, so that it
// is not decoded again to be written (nil: none).
func (tx *EntryTx) item(key string, v any) {
	if tx.items == nil {
		tx.items = map[string]any{}
	}
	tx.items[key] = v
}

func (tx *EntryTx) set(key string, raw json.RawMessage) {
	if _, seen := tx.orig[key]; !seen {
		old, _ := tx.Get(key)
		tx.orig[key] = old
		tx.order = append(tx.order, key)
	}
	tx.c.SetRow(tx.tb.Name, key, raw)
}

// rollback puts the staged cube back as it was.
func (tx *EntryTx) rollback() {
	for _, k := range slices.Backward(tx.order) {
		tx.c.SetRow(tx.tb.Name, k, tx.orig[k])
	}
}

// changed lists the keys whose value differs from before, with old and new
// values (nil: absent).
func (tx *EntryTx) changed() []entryChange {
	var out []entryChange
	for _, k := range tx.order {
		now, _ := tx.Get(k)
		if old := tx.orig[k]; !bytes.Equal(old, now) || (old == nil) != (now == nil) {
			out = append(out, entryChange{k, old, now})
		}
	}
	return out
}

type entryChange struct {
	key      string
	old, new json.RawMessage
}

// ChangeEntries applies fn's changes to one table of a cube as one change.
// When the cube's controller writes entries one by one (cube.EntryWriter),
// only the changed entries are validated, written to the kernel and
// appended to the state journal: the cost does not grow with the table.
// Otherwise it is an ordinary Update. who must own the cube; a tenant's
// entries count against its table_entries quota. It returns once the
// change is durable (see durable).
func (e *Engine) ChangeEntries(who tenant.Actor, name, table string, fn func(tx *EntryTx) error) error {
	e.mu.Lock()
	err := e.changeEntries(who, name, table, fn)
	j := e.journal
	e.mu.Unlock()
	if err != nil {
		return err
	}
	return e.durable(j)
}

// durable waits, without the engine's lock, until the journal holds on disk
// what was written to it so far: the change just made and any made
// meanwhile. Changes waiting together share one fsync (state.Journal's
// group commit), so the disk no longer serialises them. A failed fsync is
// made good by a snapshot of the state, which holds the change.
func (e *Engine) durable(j *state.Journal) error {
	crashPoint("entries-applied")
	if j == nil {
		return nil
	}
	err := j.Sync(j.Written())
	if err == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if serr := e.usableJournal(); serr != nil { // restore.go
		return fmt.Errorf("change applied but not persisted (%v): %w", err, serr)
	}
	return nil
}

// Table resolves a table of a cube who owns: the one place the API and
// the engine find it.
func (e *Engine) Table(who tenant.Actor, name, table string) (*cube.Table, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, tb, err := e.table(who, name, table)
	return tb, err
}

func (e *Engine) table(who tenant.Actor, name, table string) (*cube.Cube, *cube.Table, error) {
	c, ok := e.owned(who, name)
	if !ok {
		return nil, nil, noCube(name)
	}
	typ, err := cube.Lookup(c.Type)
	if err != nil {
		return nil, nil, err
	}
	tb, err := typ.Table(table)
	if err != nil {
		return nil, nil, err
	}
	return c, tb, nil
}

// changeEntries is ChangeEntries with e.mu held.
func (e *Engine) changeEntries(who tenant.Actor, name, table string, fn func(tx *EntryTx) error) error {
	c, tb, err := e.table(who, name, table)
	if err != nil {
		return err
	}
	l := e.cubes[name]
	ew, direct := l.ctl.(cube.EntryWriter)
	// A slicer's entries may lead into chains whose hops and index the
	// engine keeps (slicechains.go): they change through a topology change.
	if !direct || l.c == nil || isSlicer(c) {
		next := e.workingCopy()
		own, _ := next.Edit(name)
		tx := &EntryTx{c: own, tb: tb, orig: map[string]json.RawMessage{}}
		err := fn(tx)
		if err == nil {
			err = e.commit(who, next, e.dirtyOf(next))
		}
		if err != nil {
			e.recycle(next)
		}
		return err
	}
	tx := &EntryTx{c: c, tb: tb, orig: map[string]json.RawMessage{}}
	e.changedInPlace(name) // staged in the applied cube, kept or rolled back
	// counted before fn stages its changes in the applied cube
	before, used := tx.Len(), e.entriesOf(c.Tenant)
	var was *cube.Cube
	if e.cfg.Admit != nil {
		was = c.Clone() // the cube as it is: fn changes it in place
	}
	if err := fn(tx); err != nil {
		tx.rollback()
		return err
	}
	added := int64(tx.Len() - before)
	if err := e.entryQuota(who, used, added); err != nil {
		tx.rollback()
		return err
	}
	if was != nil {
		ch := AdmitChange{Rev: e.topoRev, Prev: e.topo, Next: e.topo, Was: map[string]*cube.Cube{name: was}, Cubes: []string{name}}
		if err := e.cfg.Admit(ch); err != nil {
			tx.rollback()
			return err
		}
	}
	if err := e.writeEntries(l, ew, tx); err != nil {
		tx.rollback()
		if jerr := e.usableJournal(); jerr != nil { // restore.go
			e.log.Error("state journal unusable", "err", jerr)
		}
		return err
	}
	e.index.entries(name, added)
	e.rev++
	e.topoRev++
	return nil
}

// writeEntries validates the changed entries against the cube as changed,
// writes them to the journal, then to the kernel, and records them as
// synced; on any failure the kernel and the journal are put back. (Journal
// first: a restart between the two finds the change in the state and
// writes it; the other way round, the kernel would keep an entry no state
// names, which nothing could delete.)
func (e *Engine) writeEntries(l *live, ew cube.EntryWriter, tx *EntryTx) error {
	changes := tx.changed()
	if len(changes) == 0 {
		return nil
	}
	if max := tx.tb.Limit(tx.c); max > 0 && tx.Len() > max {
		return cube.Full("tables."+tx.tb.Name, "%d entries, at most %d", tx.Len(), max)
	}
	for _, ch := range changes {
		if ch.new == nil || tx.items[ch.key] != nil {
			continue // deleted, or decoded and checked by Put against this cube
		}
		if _, k, err := tx.tb.DecodeEntry(tx.c, ch.new); err != nil {
			return err
		} else if k != ch.key {
			return cube.Errorf("tables."+tx.tb.Name, "entry stored under key %q has key %q", ch.key, k)
		}
	}
	if err := e.usableJournal(); err != nil {
		return err
	}
	recs := make([]state.Record, len(changes))
	for i, ch := range changes {
		recs[i] = state.Record{Cube: tx.c.Name, Table: tx.tb.Name, Key: ch.key, Value: ch.new, Was: ch.old}
	}
	mark := e.journal.Mark()
	// written, not yet synced: the caller waits for that without the
	// engine's lock (durable)
	if _, err := e.journal.Write(recs); err != nil {
		return err
	}
	crashPoint("entries-journalled")
	h := &handle{e: e, l: l}
	for i, ch := range changes {
		if err := e.writeEntry(h, ew, tx, ch.key, ch.old, ch.new); err != nil {
			for _, ch := range slices.Backward(changes[:i]) {
				if err := e.writeEntry(h, ew, tx, ch.key, ch.new, ch.old); err != nil {
					e.log.Error("rollback of a table entry failed; the kernel may differ from the desired state",
						"cube", tx.c.Name, "table", tx.tb.Name, "key", ch.key, "err", err)
				}
			}
			if jerr := e.journal.Rollback(mark); jerr != nil {
				// ChangeEntries snapshots the state without the change.
				e.log.Error("state journal: a refused change could not be removed", "err", jerr)
			}
			return err
		}
	}
	if l.sharesCube() {
		// calls without the engine's lock read l.c: they keep theirs
		l.c = l.c.WithOwnTable(tx.tb.Name)
	}
	for _, ch := range changes {
		l.c.SetRow(tx.tb.Name, ch.key, ch.new)
	}
	e.publishPuntView(l)
	l.json = nil
	e.compactJournal()
	return nil
}

// writeEntry makes the kernel hold to instead of from for one key.
func (e *Engine) writeEntry(h *handle, ew cube.EntryWriter, tx *EntryTx, key string, from, to json.RawMessage) error {
	raw, put := to, true
	if to == nil {
		raw, put = from, false
	}
	item := tx.items[key]
	if !put || item == nil || !bytes.Equal(raw, tx.c.Tables[tx.tb.Name][key]) {
		var err error
		if item, _, err = tx.tb.DecodeEntry(tx.c, raw); err != nil {
			return err
		}
	}
	if put {
		return ew.PutEntry(h, tx.c, tx.tb.Name, item)
	}
	return ew.DeleteEntry(h, tx.c, tx.tb.Name, item)
}

// journalMax is the journal size at which it is folded into a snapshot,
// unless the snapshot is bigger.
const journalMax = 8 << 20

// compactJournal writes a snapshot once the journal has grown big (a failed
// snapshot only delays that: the journal still holds every change): as big
// as the last snapshot, so that writing snapshots costs a constant share of
// the changes however big the tables are.
func (e *Engine) compactJournal() {
	if e.journal.Size() < max(journalMax, e.snapSize) {
		return
	}
	if err := e.save(e.topo); err != nil {
		e.log.Warn("state snapshot failed; the journal keeps the changes", "err", err)
	}
}

// store is the cube.Store of one loaded cube: its controller's goroutines
// change the cube's tables through it for as long as that cube is loaded,
// acting for the cube's owner (a tenant's sessions count against its
// table_entries quota like those it writes through the API).
type store struct {
	e *Engine
	l *live
}

// owner is who the cube's own changes act for (e.mu held).
func (s *store) owner() tenant.Actor {
	if c := s.e.topo.Lookup(s.l.dc.Name); c != nil && c.Tenant != "" {
		return tenant.Of(c.Tenant)
	}
	return tenant.Admin
}

func (s *store) ChangeEntries(table string, fn func(tx cube.EntryTx) error) error {
	s.e.mu.Lock()
	if s.e.cubes[s.l.dc.Name] != s.l {
		s.e.mu.Unlock()
		return noCube(s.l.dc.Name)
	}
	err := s.e.changeEntries(s.owner(), s.l.dc.Name, table, func(tx *EntryTx) error { return fn(tx) })
	j := s.e.journal
	s.e.mu.Unlock()
	if err != nil {
		return err
	}
	return s.e.durable(j)
}

func (s *store) Do(fn func(h cube.Handle) error) error {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	if s.e.cubes[s.l.dc.Name] != s.l {
		return noCube(s.l.dc.Name)
	}
	return fn(&handle{e: s.e, l: s.l})
}

func (s *store) Entry(table, key string) (json.RawMessage, bool) {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	c := s.e.topo.Lookup(s.l.dc.Name)
	if s.e.cubes[s.l.dc.Name] != s.l || c == nil {
		return nil, false
	}
	raw, ok := c.Tables[table][key]
	return raw, ok
}
