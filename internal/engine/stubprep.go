package engine

// Peering outside the lock. Putting a program on an interface waits for the
// kernel's RCU grace periods (an XDP or TCX link, the copy machine: 5–25 ms
// each) and runs the verifier for a direct entry; under the engine's lock
// every other tenant's change waited for it. A change that peers a port of
// a running cube with an interface that has no program yet is judged
// first (check), then the lock is let go while the program goes on the
// interface with an empty hop (datapath.PrepareStub: its frames go on to
// the Linux stack, as before), and the change is made again under the
// lock: its reconcile finds the program in place and writes the hop.

import (
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// holdPeering, set by tests, runs as an interface program is prepared,
// outside the lock.
var holdPeering func(iface string)

// stubPrep is an interface program a change is about to put in place.
type stubPrep struct {
	key    StubKey
	direct *datapath.Program
}

// stubsToPrepare lists the interfaces next peers with ports of loaded
// cubes (changed ones, d) that run no program yet and that no attachment
// makes start with a transparent cube, with the cube whose direct entry
// will run there; done are those prepared already. Under the lock.
func (e *Engine) stubsToPrepare(next *cube.Topology, d dirty, done map[StubKey]bool) []stubPrep {
	var out []stubPrep
	for _, name := range d.cubes {
		c, l := next.Lookup(name), e.cubes[name]
		slot, ok := e.slots[name]
		if c == nil || l == nil || !ok || l.dc.Hook != c.Hook {
			continue
		}
		for _, p := range c.Ports {
			if p.Peer == "" || strings.Contains(p.Peer, ":") || len(next.Attachments[p.Peer]) > 0 {
				continue
			}
			k := StubKey{p.Peer, c.Hook, datapath.Ingress}
			if _, tried := done[k]; tried || e.stubs[k] != nil {
				continue
			}
			out = append(out, stubPrep{k, e.entryCube(c.Hook, slot)})
		}
	}
	return out
}

// prepareStubs puts the programs of list in place, outside the lock, and
// marks in done whether each was (false: the change attaches it, and
// meets and reports the failure).
func (e *Engine) prepareStubs(list []stubPrep, done map[StubKey]bool) {
	for _, sp := range list {
		done[sp.key] = false
		if holdPeering != nil {
			holdPeering(sp.key.Iface)
		}
		idx, err := ifindex(sp.key.Iface)
		if err != nil {
			continue
		}
		if err := e.dp.PrepareStub(sp.key.Iface, idx, sp.key.Hook, sp.key.Dir, sp.direct); err != nil {
			e.log.Debug("interface program not prepared: the change attaches it", "interface", sp.key.Iface, "err", err)
			continue
		}
		done[sp.key] = true
	}
}

// dropPrepared removes what was prepared (or half prepared) for
// interfaces no change took (it failed, or another changed them first).
// Under the lock.
func (e *Engine) dropPrepared(done map[StubKey]bool) {
	for k := range done {
		if e.stubs[k] == nil {
			e.dp.DetachStub(k.Iface, k.Hook, k.Dir)
			clear(e.redirectReady) // its peer may have relied on it
		}
	}
}
