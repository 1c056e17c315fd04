package upf

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// UE pools in the kernel: the downlink finds a pooled UE address's list
// through an array indexed by the address's offset in its pool (a few
// compares and inlined array lookups) instead of a hash lookup. Each pool
// of the settings gets, in order and up to poolsMax per family, the next
// window of the slots (upf_ue_slots' size, a slot per session); addresses past a pool's window, and in no
// pool, keep the hash maps (upf_ue4, upf_ue6).

// poolLayout is the kernel's pool table for the settings' pools, in slots
// slots.
func poolLayout(pools []model.UEPool, slots uint32) kPools {
	var k kPools
	next := uint32(0)
	for _, p := range pools {
		pf := netip.MustParsePrefix(p.Prefix)
		var base uint64
		var span int // log2 of the addresses (IPv4) or /64s (IPv6) in the pool
		if pf.Addr().Is4() {
			b := pf.Addr().As4()
			base, span = uint64(binary.BigEndian.Uint32(b[:])), 32-pf.Bits()
		} else {
			b := pf.Addr().As16()
			base, span = binary.BigEndian.Uint64(b[:8]), 64-pf.Bits()
		}
		n := uint32(min(uint64(1)<<min(span, 32), uint64(slots-next)))
		if n == 0 {
			break
		}
		pl := kPool{Base: base, Size: n, First: next}
		switch {
		case pf.Addr().Is4() && k.N4 < poolsMax:
			k.V4[k.N4] = pl
			k.N4++
		case pf.Addr().Is6() && k.N6 < poolsMax:
			k.V6[k.N6] = pl
			k.N6++
		default:
			continue
		}
		next += n
	}
	return k
}

// slot is the slot of a UE address's list (false: it is not in an indexed
// part of a pool, and its list is in a hash map).
func (p *kPools) slot(k listKey) (uint32, bool) {
	var h uint64
	var pools []kPool
	switch k.Kind {
	case keyUE4:
		var b [4]byte
		binary.NativeEndian.PutUint32(b[:], uint32(k.K))
		h, pools = uint64(binary.BigEndian.Uint32(b[:])), p.V4[:min(p.N4, poolsMax)]
	case keyUE6:
		var b [8]byte
		binary.NativeEndian.PutUint64(b[:], k.K)
		h, pools = binary.BigEndian.Uint64(b[:]), p.V6[:min(p.N6, poolsMax)]
	default:
		return 0, false
	}
	for _, pl := range pools {
		if off := h - pl.Base; off < uint64(pl.Size) {
			return pl.First + uint32(off), true
		}
	}
	return 0, false
}

// kindOf is the kind of key (keyUE4, keyUE6) whose lists slot i holds.
func (p *kPools) kindOf(i uint32) (uint8, bool) {
	for _, pl := range p.V4[:min(p.N4, poolsMax)] {
		if i-pl.First < pl.Size {
			return keyUE4, true
		}
	}
	for _, pl := range p.V6[:min(p.N6, poolsMax)] {
		if i-pl.First < pl.Size {
			return keyUE6, true
		}
	}
	return 0, false
}

// setPools checks that the settings' pools leave every pooled UE address's
// list in its slot (a list found in a slot cannot move while packets may
// read it), then writes them to the kernel. Lists in a hash map that the
// new pools index move into their slots as their sessions are applied.
func (ctl *controller) setPools(pools []model.UEPool) error {
	next := poolLayout(pools, ctl.maps.ueSlots.MaxEntries())
	if next == ctl.pools {
		return nil
	}
	// The error names the session in the way in the lowest slot: the same
	// one whatever order the maps are walked in.
	var err error
	first := uint32(math.MaxUint32)
	check := func(k listKey, seid uint64) {
		i, ok := ctl.pools.slot(k)
		if j, still := next.slot(k); ok && (!still || j != i) && i < first {
			first = i
			err = cube.Conflict("ue_pools", "%s of session %d is in a pool, in slot %d of the pools' array; these pools "+
				"would put it elsewhere: a pool with sessions cannot shrink, move or go, nor a pool before it grow "+
				"(delete the sessions first)", k, seid, i)
		}
	}
	for k, seid := range ctl.keyOwner {
		check(k, seid)
	}
	for seid, s := range ctl.recovered {
		for k := range s.lists {
			check(k, seid)
		}
	}
	if err != nil {
		return err
	}
	if err := ctl.maps.pools.Put(uint32(0), &next); err != nil {
		return fmt.Errorf("upf_pools: %w", err)
	}
	ctl.pools = next
	return nil
}
