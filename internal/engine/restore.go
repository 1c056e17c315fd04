package engine

// Starting from what an earlier daemon left: the state file and its
// journal, and the kernel objects pinned under the root. The state is the
// truth; what the kernel holds beyond it is removed (interface programs,
// entries of changes the daemon stopped in the middle of) or reported
// (pinned cubes), and a cube that cannot be restored is put down alone.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/state"
)

// checkEmptyState refuses a state that names no cube while cubes or
// interface programs are pinned: the state file was lost or emptied, and
// starting would hide a datapath that still forwards.
func checkEmptyState(dp *datapath.Datapath, cfg Config) error {
	cubes, err := dp.PinnedCubes()
	if err != nil {
		return err
	}
	stubs, err := dp.PinnedStubs()
	if err != nil {
		return err
	}
	if len(cubes) == 0 && len(stubs) == 0 {
		return nil
	}
	var ifaces []string
	for _, s := range stubs {
		ifaces = append(ifaces, s.Iface)
	}
	return fmt.Errorf("the state file %s names no cube, but %d cube(s) [%s] and %d interface program(s) [%s] are pinned under %s and may still be forwarding: "+
		"restore the state file, or start once with -adopt-empty to make the empty state true (the pinned objects are removed), or remove everything with edgenfd -destroy",
		cfg.StateFile, len(cubes), brief(cubes), len(stubs), brief(slices.Compact(ifaces)), cfg.PinRoot)
}

// brief lists names, the first ten of them.
func brief(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(", and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}

// invalidCubes finds the cubes of a state that no longer validate (the
// rules changed since it was written): each is restored down, alone, while
// the rest of the topology comes up. Problems that are not one cube's
// (attachments) still refuse the whole state.
func invalidCubes(t *cube.Topology) (map[string]error, error) {
	bad := map[string]error{}
	accepted := cube.NewTopology() // cubes validated as they are: bad ones
	for {
		err := t.ValidateChange(accepted, nil)
		if err == nil {
			return bad, nil
		}
		var fe *cube.FieldError
		name := ""
		if errors.As(err, &fe) {
			name = cubeOfField(fe.Field)
		}
		if name == "" || bad[name] != nil {
			return nil, err
		}
		bad[name] = err
		accepted.Put(t.Lookup(name))
	}
}

// cubeOfField is the cube a field path ("cubes.NAME.ports[p0]...") names.
func cubeOfField(field string) string {
	rest, ok := strings.CutPrefix(field, "cubes.")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, ".["); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// downController is the controller of a cube that is down: nothing to
// write, no views or actions (Engine.running refuses them, lookup.go).
type downController struct{}

func (downController) Sync(cube.Handle, *cube.Cube) error { return nil }

// putDown puts the stand-in program (datapath.DownSpec) in a cube's slot:
// its frames are dropped and counted, its hops and other maps stay pinned
// for when it comes back.
func (e *Engine) putDown(c *cube.Cube, attch string, reason error) error {
	typ, err := cube.Lookup(c.Type)
	if err != nil {
		typ = &cube.Type{Name: c.Type}
	}
	hook := c.Hook
	if hook != datapath.XDP && hook != datapath.TC {
		hook = datapath.XDP
	}
	if l := e.cubes[c.Name]; l != nil {
		l.dc.Close() // a half-restored cube: its handles go, its pins stay
		e.forget(c.Name)
	}
	spec, err := datapath.DownSpec(hook, typ.Transparent)
	if err != nil {
		return err
	}
	// over the cube's pins, which may be an earlier release's: the maps
	// the stand-in shares with the cube are reset if their layout
	// changed, the others wait for the cube's own program (bringUp)
	dc, _, err := e.upgradeCube(c.Name, hook, e.slots[c.Name], spec, datapath.UpgradeOptions{KeepAbsent: true})
	if err != nil {
		return fmt.Errorf("cube %s could not be restored (%v), nor replaced by its stand-in: %w", c.Name, reason, err)
	}
	l := &live{typ: typ, ctl: downController{}, dc: dc, c: c.Clone(), attch: attch, down: reason.Error(), chainHops: map[int]datapath.Hop{}}
	if l.hops, l.flood, err = dc.PortState(); err != nil {
		l.hops, l.flood = map[int]datapath.Hop{}, map[int]int{}
	}
	l.json, _ = c.MarshalJSON()
	e.cubes[c.Name] = l
	e.bindSlot(l)
	e.log.Error("cube could not be restored: it is down, its frames are dropped until it is changed or deleted", "cube", c.Name, "err", reason)
	return nil
}

// bringUp replaces a down cube's stand-in by its real program, for a
// change to the cube. If that fails the stand-in stays, and the change
// fails with the reason.
func (e *Engine) bringUp(l *live, c *cube.Cube, attch string) error {
	if l.dc.Hook != c.Hook || l.typ.Name != c.Type {
		if err := l.dc.Unload(); err != nil {
			return err
		}
		e.forget(c.Name)
		if err := e.ensureCube(c, attch, false); err != nil {
			if derr := e.putDown(l.c, l.attch, errors.New(l.down)); derr != nil {
				e.log.Error("cube left without a program", "cube", c.Name, "err", derr)
			}
			return err
		}
		return nil
	}
	up, err := e.loadOver(c) // upgrade.go
	if err != nil {
		return err
	}
	if up.hops, up.flood, err = up.dc.PortState(); err != nil {
		up.hops, up.flood = map[int]datapath.Hop{}, map[int]int{}
	}
	l.dc.Close()
	e.cubes[c.Name] = up
	e.bindSlot(up)
	if err := e.syncCube(up, c, attch); err != nil {
		if derr := e.putDown(l.c, l.attch, errors.New(l.down)); derr != nil {
			e.log.Error("cube left without a program", "cube", c.Name, "err", derr)
		}
		return err
	}
	up.c, up.attch = c.Clone(), attch
	up.json, _ = c.MarshalJSON()
	e.log.Info("cube is up again", "cube", c.Name)
	return nil
}

// downErr refuses an operation that needs a cube's program.
func downErr(l *live) error {
	return cube.Conflict("cube", "cube %s is down: %s (change its settings to bring it up, or delete it)", l.c.Name, l.down)
}

// removeResidues deletes from the kernel the entries a change may have
// left there although the state does not have them: the daemon stopped
// after writing the kernel and before its snapshot (intents), or after
// journalling a deletion and before making it (the old values).
func (e *Engine) removeResidues(rs []state.Residue) {
	type key struct{ cube, table, key string }
	done := map[key]bool{}
	for _, r := range rs {
		k := key{r.Cube, r.Table, r.Key}
		if done[k] {
			continue
		}
		done[k] = true
		c, l := e.topo.Lookup(r.Cube), e.cubes[r.Cube]
		if c == nil || l == nil || l.down != "" {
			continue // not running: nothing of it in the datapath
		}
		if _, kept := c.Tables[r.Table][r.Key]; kept {
			continue // restored from the state
		}
		ew, ok := l.ctl.(cube.EntryWriter)
		if !ok {
			continue // its controller rewrote its maps whole
		}
		tb, err := l.typ.Table(r.Table)
		if err != nil {
			continue
		}
		item, _, err := tb.DecodeEntry(c, r.Value)
		if err != nil {
			e.log.Warn("entry of an unfinished change not removed: it no longer decodes", "cube", r.Cube, "table", r.Table, "key", r.Key, "err", err)
			continue
		}
		if err := ew.DeleteEntry(&handle{e: e, l: l}, c, r.Table, item); err != nil {
			e.log.Debug("entry of an unfinished change not in the kernel", "cube", r.Cube, "table", r.Table, "key", r.Key, "err", err)
			continue
		}
		e.log.Warn("removed from the kernel an entry the state does not have (a change the daemon stopped in the middle of)",
			"cube", r.Cube, "table", r.Table, "key", r.Key)
	}
}

// removeLeftovers detaches the interface programs no state names (traffic
// on those interfaces must not enter cubes invisibly), and reports the
// pinned cubes no state names; with adoptEmpty it removes them.
func (e *Engine) removeLeftovers(adoptEmpty bool) error {
	stubs, err := e.dp.PinnedStubs()
	if err != nil {
		return err
	}
	named := usedIfaces(e.topo) // interfaces the state peers or attaches to
	planned := map[string]bool{}
	for k := range e.stubs {
		planned[k.Iface] = true
	}
	for _, s := range stubs {
		if _, ok := e.stubs[StubKey{s.Iface, s.Hook, s.Dir}]; ok {
			continue
		}
		if _, err := ifindex(s.Iface); err == nil && named[s.Iface] && !planned[s.Iface] {
			continue // the state's interface, not attached by this start: left as it was
		}
		// An interface missing from this namespace goes too, the state's
		// included: moved to another namespace while the daemon was
		// down, its link would run there, on that namespace's ifindexes.
		// It is peered again when it is back (links.go).
		if err := e.dp.DetachStub(s.Iface, s.Hook, s.Dir); err != nil {
			return fmt.Errorf("interface %s: %w", s, err)
		}
		e.log.Warn("removed a program from an interface no state names", "interface", s.String())
	}
	pinned, err := e.dp.PinnedCubes()
	if err != nil {
		return err
	}
	var left []string
	for _, name := range pinned {
		if !e.topo.Has(name) {
			left = append(left, name)
		}
	}
	if len(left) == 0 {
		return nil
	}
	if adoptEmpty {
		for _, name := range left {
			if err := e.dp.RemovePinned(name); err != nil {
				return err
			}
		}
		e.log.Warn("-adopt-empty: removed the pinned cubes", "cubes", brief(left))
		return nil
	}
	e.log.Warn("pinned cubes that no state names (an earlier daemon's, or a change it stopped in the middle of): "+
		"nothing reaches them; creating a cube of the same name replaces them, edgenfd -destroy removes everything",
		"cubes", brief(left), "bpffs", e.cfg.PinRoot)
	return nil
}

// journalIntents records, before the kernel is changed for next, the
// entries the kernel will hold that the last snapshot does not: if the
// daemon stops before next's snapshot, a restart removes them.
func (e *Engine) journalIntents(prev, next *cube.Topology, cs *changeSet, d dirty) error {
	var recs []state.Record
	for name := range cs.changed {
		c, l, old := next.Lookup(name), e.cubes[name], prev.Lookup(name)
		if c == nil {
			continue
		}
		if l == nil || old == nil || l.down != "" || old.Type != c.Type {
			continue // a new cube: no state names its pins before the snapshot
		}
		if _, ok := l.ctl.(cube.EntryWriter); !ok {
			continue
		}
		for _, r := range d.rowsOf(name, old, c) {
			if raw, ok := c.Tables[r.Table][r.Key]; ok {
				recs = append(recs, state.Record{Cube: name, Table: r.Table, Key: r.Key, Value: raw, Intent: true})
			}
		}
	}
	if len(recs) == 0 {
		return nil
	}
	if err := e.usableJournal(); err != nil {
		return err
	}
	return e.journal.Append(recs)
}

// usableJournal makes a journal that refuses appends (a failed append
// could not be undone) usable again with a snapshot of the applied state.
func (e *Engine) usableJournal() error {
	if !e.journal.Broken() {
		return nil
	}
	if err := e.save(e.topo); err != nil {
		return fmt.Errorf("persist state: %w", err)
	}
	return nil
}
