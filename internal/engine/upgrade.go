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
	"fmt"

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
	// SharedMapsReset counts the framework's shared maps and the
	// interface programs' maps made anew because their layout changed.
	SharedMapsReset int
	// InterfacesAdopted counts the interface programs (stubs, direct
	// entries) kept as an earlier daemon attached them: nothing loaded,
	// no link changed, only their hops written.
	InterfacesAdopted int
}

// Started says what the engine adopted and reloaded when it started.
func (e *Engine) Started() StartReport {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started
}

// adoptPinned takes over the program pinned for c, into l: as it is when
// its digest is the current object's, reloaded in place otherwise, loaded
// over the pinned maps when no program is pinned. It reports false when the
// pinned program could not be opened (the caller loads the cube).
func (e *Engine) adoptPinned(c *cube.Cube, l *live, slot uint32, spec *ebpf.CollectionSpec) (bool, error) {
	if !e.dp.HasPinnedProgram(c.Name) {
		// Maps may be pinned without a program (a daemon stopped in the
		// middle of the cube's first load), perhaps by an earlier
		// release: loaded over them by the upgrade's rules.
		e.log.Info("no pinned program to adopt, loading", "cube", c.Name)
		dc, reset, err := e.upgradeCube(c.Name, c.Hook, slot, spec, datapath.UpgradeOptions{})
		if err != nil {
			return false, explain(l.typ, c, err)
		}
		l.dc = dc
		e.recordDigest(dc, pinDigest(c.Hook, l.obj))
		e.started.MapsReset += reset
		return true, nil
	}
	want := pinDigest(c.Hook, l.obj)
	have, recorded, err := e.dp.PinnedDigest(c.Name)
	why := ""
	switch {
	case err != nil:
		why = err.Error()
	case !recorded:
		why = "no digest is recorded with it (pinned by an edgenf that recorded none, or a down cube's stand-in)"
	case have != want:
		why = "it was built from another object (edgenf was upgraded, or the cube's program changed)"
		if pinned, herr := e.dp.PinnedHook(c.Name); herr == nil && pinned != "" && pinned != c.Hook {
			why = fmt.Sprintf("it runs at %s and the state says %s", pinned, c.Hook)
		}
	default:
		// the very object, but perhaps over framework maps this start
		// renewed (datapath/framework.go)
		if why, err = e.dp.StaleFramework(c.Name); err != nil {
			why = err.Error()
		}
	}
	if why == "" {
		if l.dc, err = e.dp.AdoptCube(c.Name, c.Hook, slot, spec); err != nil {
			e.log.Info("pinned program could not be adopted, loading", "cube", c.Name, "reason", err)
			return false, nil
		}
		l.adoptPorts()
		e.started.Adopted++
		return true, nil
	}
	dc, reset, err := e.upgradeCube(c.Name, c.Hook, slot, spec, datapath.UpgradeOptions{})
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
	e.started.MapsReset += reset
	e.log.Warn("pinned program is not the current one: reloaded in place", "cube", c.Name, "type", c.Type, "hook", c.Hook, "reason", why)
	return true, nil
}

// upgradeCube loads spec for c over what is pinned for it, keeping the maps
// whose layout fits and resetting the others, and logs and counts what it
// reset (the number of maps it returns).
func (e *Engine) upgradeCube(name string, hook datapath.Hook, slot uint32, spec *ebpf.CollectionSpec, o datapath.UpgradeOptions) (*datapath.Program, int, error) {
	dc, up, err := e.dp.UpgradeCubeWith(name, hook, slot, spec, o)
	if err != nil {
		return nil, 0, err
	}
	for _, r := range up.Uncompared {
		e.log.Warn("map kept by the reload on its sizes alone", "cube", name, "map", r.Map, "reason", r.Reason)
	}
	for _, r := range up.Reset {
		e.log.Warn("map reset by the reload: its contents are lost (the state file's entries are written again)", "cube", name, "map", r.Map, "reason", r.Reason)
	}
	return dc, len(up.Reset), nil
}

// loadOver loads c's program over what its pins hold (a down cube brought
// up: the pins are its stand-in's and, beyond them, those of the program
// an earlier daemon ran, perhaps an earlier release's): maps of another
// layout are reset, not refused.
func (e *Engine) loadOver(c *cube.Cube) (*live, error) {
	l, spec, err := e.newLive(c)
	if err != nil {
		return nil, err
	}
	if l.dc, _, err = e.upgradeCube(c.Name, c.Hook, e.slots[c.Name], spec, datapath.UpgradeOptions{}); err != nil {
		return nil, explain(l.typ, c, err)
	}
	e.recordDigest(l.dc, pinDigest(c.Hook, l.obj))
	return l, nil
}

// logRenewed says which of the framework's shared maps the datapath made
// anew at open: an earlier release's no longer fit this one.
func (e *Engine) logRenewed() {
	for _, r := range e.dp.RenewedMaps() {
		e.started.SharedMapsReset++
		e.log.Warn("framework map renewed: its layout changed (every pinned cube is reloaded and every interface program attached again over the new one)", "map", r.Map, "reason", r.Reason)
	}
}

// logStubReset says which maps of an interface program its attach replaced.
func (e *Engine) logStubReset(k StubKey, s *datapath.Stub) {
	for _, r := range s.Reset {
		if r.Absent() {
			e.log.Info("interface program's map removed: the current program does not use it", "interface", k.Iface, "hook", k.Hook, "dir", k.Dir.String(), "map", r.Map)
			continue
		}
		e.started.SharedMapsReset++
		e.log.Warn("interface program's map reset: its layout changed (its counters start from zero)", "interface", k.Iface, "hook", k.Hook, "dir", k.Dir.String(), "map", r.Map, "reason", r.Reason)
	}
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
