package datapath

// Direct hops (bpf/include/edgenf/maps.h, verdict.h: enf_to_peer). A hop
// from a cube's port into another cube is a tail call. Through the panel its
// index is computed, so the JIT emits an indirect jump, which retpolines
// make cost about 15 ns a hop here; through a constant index it is a direct
// jump the kernel patches on every update. So each cube keeps, for its
// ports below DirectPorts, the program its peer cube runs (enf_peers) and
// that program's id (enf_peer_ids), and the shared enf_owner says which
// program each panel slot runs: the fast path jumps directly only while the
// two ids agree, and through the panel otherwise. The datapath keeps them
// agreeing: SetHop fills a port's entry, and every panel change (load, hot
// swap, unload) refreshes the entries that lead into the slot. A stale entry
// (a daemon that died between two writes) costs speed, never a wrong
// delivery.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
)

const (
	// DirectPorts is how many of a cube's ports take direct hops
	// (EDGENF_DIRECT_PORTS); the others go through the panel.
	DirectPorts  = 16
	mapPeers     = "enf_peers"
	mapPeerIDs   = "enf_peer_ids"
	mapOwner     = "enf_owner"
	ownerPinPart = "_owner"
)

// peerRef is a cube's port whose direct hop enters some slot.
type peerRef struct {
	dir  string // the cube's pin directory
	port uint32
}

// isDirectMap: maps of the direct hops a cube's Program does not hold
// open (two fewer descriptors a cube in the daemon); opened when needed.
func isDirectMap(name string) bool { return name == mapPeers || name == mapPeerIDs }

// dropUnused removes the direct-hop maps from spec when no program of it
// uses them (interface stubs), so that they are neither created nor pinned.
func dropUnused(spec *ebpf.CollectionSpec) {
	used := map[string]bool{}
	for _, p := range spec.Programs {
		for _, ins := range p.Instructions {
			if r := ins.Reference(); r != "" {
				used[r] = true
			}
		}
	}
	for _, n := range []string{mapPeers, mapPeerIDs, mapOwner} {
		if !used[n] {
			delete(spec.Maps, n)
		}
	}
}

// setOwner records that the hook's panel slot runs prog (nil: nothing) and
// points the direct hops into the slot at it.
func (d *Datapath) setOwner(hook Hook, slot uint32, prog *ebpf.Program) error {
	d.peersMu.Lock()
	defer d.peersMu.Unlock()
	var id uint32
	if prog != nil {
		info, err := prog.Info()
		if err != nil {
			return err
		}
		pid, ok := info.ID()
		if !ok {
			return errors.New("program id: not available on this kernel")
		}
		id = uint32(pid)
	}
	if err := d.owners[hook].Put(slot, id); err != nil {
		return fmt.Errorf("panel owner of slot %d: %w", slot, err)
	}
	var errs []error
	for ref := range d.callers[hook][slot] {
		errs = append(errs, d.setPeer(hook, ref, prog, id))
	}
	return errors.Join(errs...)
}

// setPeer makes the direct hop of ref enter prog (id), or no program (the
// entry then holds the vacant program: vacant.go). enf_peer_ids goes to 0
// first, so the fast path never pairs a new id with an old program
// (d.peersMu held).
func (d *Datapath) setPeer(hook Hook, ref peerRef, prog *ebpf.Program, id uint32) error {
	ids, peers, err := openDirect(ref.dir)
	if err != nil || ids == nil {
		return err
	}
	defer ids.Close()
	defer peers.Close()
	if err := ids.Put(ref.port, uint32(0)); err != nil {
		return err
	}
	if prog == nil {
		var held uint32 // a program array's entry reads as its program's id
		if err := peers.Lookup(ref.port, &held); errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil // empty: writing it would patch the callers' jumps
		}
		vacant, err := d.vacant(hook)
		if err == nil {
			err = peers.Put(ref.port, vacant)
		}
		if err != nil {
			// a cube object of another kind (frags, say) than the vacant
			// program: deleting is slower, as correct
			if derr := peers.Delete(ref.port); derr != nil && !errors.Is(derr, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("direct hop of port %d: %w", ref.port, errors.Join(err, derr))
			}
		}
		return nil
	}
	if err := peers.Put(ref.port, prog); err != nil {
		return fmt.Errorf("direct hop of port %d: %w", ref.port, err)
	}
	return ids.Put(ref.port, id)
}

// openDirect opens a cube's direct-hop maps from their pins; nil, nil when
// its object has none.
func openDirect(dir string) (ids, peers *ebpf.Map, err error) {
	ids, err = ebpf.LoadPinnedMap(filepath.Join(dir, mapPeerIDs), nil)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if peers, err = ebpf.LoadPinnedMap(filepath.Join(dir, mapPeers), nil); err != nil {
		ids.Close()
		return nil, nil, err
	}
	return ids, peers, nil
}

// setDirect keeps port's direct hop in step with its new hop h: into the
// program the panel slot runs now when h enters a cube with no transparent
// cube on the way, else none. Called after enf_ports holds h.
func (c *Program) setDirect(port uint32, h Hop) error {
	if port >= DirectPorts {
		return nil
	}
	d := c.d
	d.peersMu.Lock()
	defer d.peersMu.Unlock()
	ref := peerRef{c.dir, port}
	d.dropCaller(c.Hook, ref)
	if h.Kind != DstCube || h.NStack != 0 {
		return d.setPeer(c.Hook, ref, nil, 0)
	}
	d.addCaller(c.Hook, h.Slot, ref)
	var id uint32
	if err := d.panels[c.Hook].Lookup(h.Slot, &id); err != nil || id == 0 {
		return d.setPeer(c.Hook, ref, nil, 0) // the slot is empty: filled when loaded
	}
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
	if err != nil {
		return d.setPeer(c.Hook, ref, nil, 0) // unloaded meanwhile
	}
	defer prog.Close()
	return d.setPeer(c.Hook, ref, prog, id)
}

// adoptDirect re-learns, for a cube adopted after a restart, which slots
// its direct hops enter, so that later panel changes refresh them.
func (c *Program) adoptDirect() error {
	ids, peers, err := openDirect(c.dir)
	if err != nil || ids == nil {
		return err
	}
	defer ids.Close()
	peers.Close()
	ports, err := c.Map(MapPorts)
	if err != nil {
		return err
	}
	d := c.d
	d.peersMu.Lock()
	defer d.peersMu.Unlock()
	for port := uint32(0); port < DirectPorts; port++ {
		var h Hop
		if err := ports.Lookup(port, &h); err != nil {
			return err
		}
		if h.Kind != DstCube || h.NStack != 0 {
			continue
		}
		ref := peerRef{c.dir, port}
		d.addCaller(c.Hook, h.Slot, ref)
		// The slot's program may have changed since the hop was written
		// (upgraded at this start, before or after this cube): the fast
		// path would take the panel, correct but slower. Point it anew.
		var have, owner uint32
		if err := ids.Lookup(port, &have); err != nil {
			return err
		}
		if err := d.owners[c.Hook].Lookup(h.Slot, &owner); err != nil || owner == have || owner == 0 {
			continue
		}
		if prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(owner)); err == nil {
			err = d.setPeer(c.Hook, ref, prog, owner)
			prog.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// addCaller records that ref's direct hop enters slot (d.peersMu held).
func (d *Datapath) addCaller(hook Hook, slot uint32, ref peerRef) {
	if d.callers[hook][slot] == nil {
		d.callers[hook][slot] = map[peerRef]bool{}
	}
	d.callers[hook][slot][ref] = true
	d.entered[hook][ref] = slot
}

// dropCaller forgets where ref's direct hop went, if anywhere (d.peersMu
// held).
func (d *Datapath) dropCaller(hook Hook, ref peerRef) {
	slot, ok := d.entered[hook][ref]
	if !ok {
		return
	}
	delete(d.entered[hook], ref)
	delete(d.callers[hook][slot], ref)
	if len(d.callers[hook][slot]) == 0 {
		delete(d.callers[hook], slot)
	}
}

// forgetDirect drops an unloaded cube's ports from the index.
func (c *Program) forgetDirect() error {
	d := c.d
	d.peersMu.Lock()
	defer d.peersMu.Unlock()
	for port := uint32(0); port < DirectPorts; port++ {
		d.dropCaller(c.Hook, peerRef{c.dir, port})
	}
	return nil
}
