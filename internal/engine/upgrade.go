package engine

// Upgrades in place. A daemon started over cubes an earlier daemon pinned
// adopts a pinned program only when it was built from the very object this
// daemon would load for the cube (the same build of the NF's C, the same P4
// program through the same compiler, the same hook): a digest recorded with
// every load says so. Otherwise the pinned program is stale — this
// daemon's control plane would write maps that program reads differently —
// and the cube is reloaded from the current object in one panel update
// (traffic flows throughout): its maps are kept where their layout is
// unchanged, reset where it changed, and the controller's sync writes again
// what the state file holds.

import (
	"crypto/sha256"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// pinFormat versions the digest: a loader change that makes the same object
// load differently bumps it, and every cube is reloaded once.
const pinFormat = "edgenf-pin-1"

// pinDigest is what a cube's program is recorded as built from: its
// object (obj, the object's sha256) at hook.
func pinDigest(hook datapath.Hook, obj [32]byte) datapath.Digest {
	h := sha256.New()
	h.Write([]byte(pinFormat + "\x00" + string(hook) + "\x00"))
	h.Write(obj[:])
	var d datapath.Digest
	copy(d[:], h.Sum(nil))
	return d
}

// StartReport is what the engine found pinned when it started.
type StartReport struct {
	// Adopted cubes run the program an earlier daemon pinned, unchanged.
	Adopted int
	// Reloaded cubes had a pinned program built from another object
	// (an upgrade, or a stand-in): it was replaced in place.
	Reloaded int
	// MapsReset counts the maps of reloaded cubes whose layout changed:
	// their contents were lost.
	MapsReset int
}

// Started says what the engine adopted and reloaded when it started.
func (e *Engine) Started() StartReport {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started
}

// adoptPinned takes over the program pinned for c, into l: as it is when
// its digest is the current object's, reloaded in place otherwise. It
// reports false when nothing usable is pinned (the caller loads the cube).
func (e *Engine) adoptPinned(c *cube.Cube, l *live, slot uint32, spec *ebpf.CollectionSpec) (bool, error) {
	if !e.dp.HasPinnedProgram(c.Name) {
		e.log.Info("no pinned program to adopt, loading", "cube", c.Name)
		return false, nil
	}
	want := pinDigest(c.Hook, l.obj)
	have, recorded, err := e.dp.PinnedDigest(c.Name)
	if err == nil && recorded && have == want {
		if l.dc, err = e.dp.AdoptCube(c.Name, c.Hook, slot, spec); err != nil {
			e.log.Info("pinned program could not be adopted, loading", "cube", c.Name, "reason", err)
			return false, nil
		}
		l.adoptPorts()
		e.started.Adopted++
		return true, nil
	}
	why := "it was built from another object (edgenf was upgraded, or the cube's program changed)"
	switch {
	case err != nil:
		why = err.Error()
	case !recorded:
		why = "no digest is recorded with it (pinned by an edgenf that recorded none, or a down cube's stand-in)"
	}
	dc, up, err := e.dp.UpgradeCube(c.Name, c.Hook, slot, spec)
	if err != nil {
		// The old program keeps running until the caller puts a
		// stand-in in its place: never a stale program under this
		// control plane.
		return false, explain(l.typ, c, err)
	}
	l.dc = dc
	e.recordDigest(dc, want)
	l.adoptPorts()
	e.started.Reloaded++
	e.started.MapsReset += len(up.Reset)
	e.log.Warn("pinned program is not the current one: reloaded in place", "cube", c.Name, "type", c.Type, "reason", why, "maps_reset", len(up.Reset))
	for _, r := range up.Uncompared {
		e.log.Warn("map kept by the reload on its sizes alone", "cube", c.Name, "map", r.Map, "reason", r.Reason)
	}
	for _, r := range up.Reset {
		e.log.Warn("map reset by the reload: its contents are lost (the state file's entries are written again)", "cube", c.Name, "map", r.Map, "reason", r.Reason)
	}
	return true, nil
}

// adoptPorts takes what the kernel has for the cube's ports, so that what
// the state no longer names is removed, not left in place.
func (l *live) adoptPorts() {
	if hops, flood, err := l.dc.PortState(); err == nil {
		l.hops, l.flood = hops, flood
	}
}

// recordDigest records what dc was loaded from. Failing costs only a
// reload at the next start (no digest is no adoption): the change stands.
func (e *Engine) recordDigest(dc *datapath.Program, d datapath.Digest) {
	if err := dc.SetDigest(d); err != nil {
		e.log.Warn("digest of the loaded program not recorded: the next start reloads the cube", "cube", dc.Name, "err", err)
	}
}
