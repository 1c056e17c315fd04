package tableruntime

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/edgenf/edgenf/internal/p4/ir"
)

// Member and group slots are double-buffered (ir.ActionProfile): a slot's
// value is a live word, then two halves, and packets read the half the
// live word's bit 0 names. A write goes into the other half, then flips
// the bit, so a packet in flight reads the old value or the new one whole;
// one array write in place could be read half-written. Both steps rewrite
// the whole slot through the map (the only way to write part of an array
// value from user space), each time with the bytes packets may be reading
// unchanged: a copy over equal bytes is invisible to them, and the live
// bit changes in one byte. The rest of the live word is the flip's
// CLOCK_MONOTONIC time in ns.
//
// The half a write goes to was live before the slot's last flip, and a
// packet that started before that flip may still be reading it. So unless
// an RCU grace period has started since that flip (every XDP and TC
// program runs inside an RCU read-side section; after a grace period none
// that started before it is left), the write waits for one first. One
// grace period covers every slot flipped before it started: rewriting
// many members waits once, and only a slot rewritten within a grace
// period of its last change waits at all.

// lastGrace is the CLOCK_MONOTONIC time (ns) at which the latest grace
// period this process waited for started.
var lastGrace atomic.Int64

func monotonicNs() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// membarrierCmdGlobal is MEMBARRIER_CMD_GLOBAL (linux/membarrier.h): the
// kernel returns after synchronize_rcu() (at once on a single CPU, where
// no packet can be in flight while this runs).
const membarrierCmdGlobal = 1

// graceSince waits, unless one has started since flip (ns), for an RCU
// grace period.
func graceSince(flip int64) error {
	if flip < lastGrace.Load() {
		return nil
	}
	start, err := monotonicNs()
	if err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdGlobal, 0, 0); e != 0 {
		return fmt.Errorf("waiting for packets to leave a member or group's old value (membarrier): %w", e)
	}
	for {
		last := lastGrace.Load()
		if start <= last || lastGrace.CompareAndSwap(last, start) {
			return nil
		}
	}
}

// read copies the live half of member or group slot s into v.
func (pm *profileMaps) read(kind int, s uint32, v *[]byte) error {
	m, hb := pm.arrayOf(kind)
	full := make([]byte, ir.SlotLiveBytes+2*hb)
	if err := m.Lookup(s, &full); err != nil {
		return err
	}
	h := binary.NativeEndian.Uint64(full) & 1
	*v = append((*v)[:0], full[ir.SlotLiveBytes+int(h)*hb:][:hb]...)
	return nil
}

// store makes v the value of member or group slot s: written into the
// half packets do not read, then made live.
func (pm *profileMaps) store(kind int, s uint32, v []byte) error {
	m, hb := pm.arrayOf(kind)
	full := make([]byte, ir.SlotLiveBytes+2*hb)
	if err := m.Lookup(s, &full); err != nil {
		return err
	}
	live := binary.NativeEndian.Uint64(full)
	if flip := int64(live &^ 1); flip != 0 {
		if err := graceSince(flip); err != nil {
			return err
		}
	}
	half := int(live&1) ^ 1
	copy(full[ir.SlotLiveBytes+half*hb:][:hb], v)
	if err := m.Update(s, full, ebpf.UpdateAny); err != nil {
		return err
	}
	now, err := monotonicNs()
	if err != nil {
		return err
	}
	binary.NativeEndian.PutUint64(full, uint64(now)&^1|uint64(half))
	return m.Update(s, full, ebpf.UpdateAny)
}
