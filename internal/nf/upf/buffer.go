package upf

import (
	"encoding/binary"
)

// Downlink buffering. A FAR that says BUFF makes the fast path punt the
// packets it matches; they wait here, per session and in arrival order,
// bounded per session (a BAR's Suggested Buffering Packets Count, else the
// cube's buffer_packets) and overall. When a change makes the FAR forward,
// they go back into the fast path (port 63, the rule in a trailer) before
// the change returns: they reach the UE in order, ahead of the packets that
// arrive after. A change to drop, a DROBU flag or the session's deletion
// discards them.

// maxBuffered bounds the packets buffered by one cube.
const maxBuffered = 65536

type bufferedPkt struct {
	rule  ruleKey
	far   uint32 // the FAR's PFCP ID
	frame []byte
}

type buffers struct {
	bySession map[uint64][]bufferedPkt
	total     int
}

func newBuffers() *buffers { return &buffers{bySession: map[uint64][]bufferedPkt{}} }

// limit is how many packets a session may have buffered for FAR far.
func (ctl *controller) bufferLimit(st *sessState, far uint32) int {
	n := int(ctl.cfg.BufferPackets)
	if f := st.sess.Far(far); f != nil && f.BAR != nil {
		if b := st.sess.Bar(*f.BAR); b != nil && b.SuggestedPackets > 0 {
			n = min(n, int(b.SuggestedPackets))
		}
	}
	return n
}

// add buffers a punted packet of rule idx.
func (ctl *controller) buffer(idx uint32, frame []byte, complete bool) {
	r, ok := ctl.ruleOf[idx]
	if !ok {
		ctl.slow.BufferDrops++
		return
	}
	st := ctl.sessions[r.seid]
	if st == nil {
		ctl.slow.BufferDrops++
		return
	}
	key := ruleKeyOf(r.id)
	far := st.sess.Pdr(key.PDR).FAR
	b := ctl.buffers
	q := b.bySession[r.seid]
	if !complete || len(q) >= ctl.bufferLimit(st, far) || b.total >= maxBuffered {
		ctl.slow.BufferDrops++
		return
	}
	b.bySession[r.seid] = append(q, bufferedPkt{rule: key, far: far, frame: frame})
	b.total++
}

// sessionChanged releases the packets of FARs that now forward and drops
// those of FARs that now drop.
func (b *buffers) sessionChanged(ctl *controller, seid uint64, old, n *sessState) {
	q := b.bySession[seid]
	if len(q) == 0 {
		return
	}
	var keep []bufferedPkt
	for _, p := range q {
		f := n.sess.Far(p.far)
		r, ok := n.rules[p.rule]
		switch {
		case f == nil || !ok || f.HasAction("drop"):
			ctl.slow.BufferDrops++
		case f.HasAction("buff"):
			keep = append(keep, p)
		default:
			if err := ctl.release(r.idx, p.frame); err != nil {
				ctl.slow.BufferDrops++
			} else {
				ctl.slow.BufferReleased++
			}
		}
	}
	b.total -= len(q) - len(keep)
	if len(keep) == 0 {
		delete(b.bySession, seid)
	} else {
		b.bySession[seid] = keep
	}
}

// release sends a buffered frame back into the fast path to be handled by
// rule idx.
func (ctl *controller) release(idx uint32, frame []byte) error {
	if ctl.handle == nil {
		return errNoHandle
	}
	out := make([]byte, len(frame), len(frame)+8)
	copy(out, frame)
	out = binary.NativeEndian.AppendUint32(out, idx)
	out = binary.NativeEndian.AppendUint32(out, releaseMagic)
	return ctl.handle.Inject(portRelease, out)
}

// drop discards a session's buffered packets.
func (b *buffers) drop(seid uint64) int {
	n := len(b.bySession[seid])
	b.total -= n
	delete(b.bySession, seid)
	return n
}

// DropBuffered implements agent.Datapath.
func (ctl *controller) DropBuffered(seid uint64) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.slow.BufferDrops += uint64(ctl.buffers.drop(seid))
}
