package engine

// Frames injected into a cube port by a user (the API's inject).

import (
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Inject sends a frame into a cube port as if received (out=false) or out of
// the port to its peer (out=true), within who's injects_per_second.
func (e *Engine) Inject(who tenant.Actor, name string, port string, frame []byte, out bool) error {
	if err := e.takeInject(who); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.running(who, name)
	if err != nil {
		return err
	}
	p := l.c.Port(port)
	if p == nil {
		return cube.NotFound("port", "cube %s has no port %q", name, port)
	}
	if len(frame) < 14 {
		return cube.Errorf("frame", "%d bytes is shorter than an Ethernet header", len(frame))
	}
	if err := e.checkFrameSize(l, p, frame); err != nil {
		return err
	}
	h := &handle{e: e, l: l}
	if out {
		if hop, ok := l.hops[p.Index]; !ok || hop.Kind == datapath.DstNone {
			return cube.Conflict("port", "port %s is not peered: a frame sent out of it goes nowhere", port)
		}
		return h.Transmit(p.Index, frame)
	}
	return h.Inject(p.Index, frame)
}

// defaultMTU is the MTU of a port that is not peered with an interface.
const defaultMTU = 1500

// checkFrameSize refuses a frame longer than the port can carry: its
// interface's MTU (1500 for other ports) plus the Ethernet header and the
// frame's VLAN tags, and no longer than the injector takes.
func (e *Engine) checkFrameSize(l *live, p *cube.Port, frame []byte) error {
	mtu := defaultMTU
	if i, ok := (&handle{e: e, l: l}).PortIface(p.Index); ok {
		mtu = i.MTU
	}
	max := mtu + 14
	for off := 12; off+4 <= len(frame) && (frame[off] == 0x81 && frame[off+1] == 0x00 || frame[off] == 0x88 && frame[off+1] == 0xa8); off += 4 {
		max += 4
	}
	if inj := e.pio.inj.MaxFrame(); max > inj {
		max = inj
	}
	if len(frame) > max {
		return cube.Conflict("frame", "%d bytes is longer than port %s carries: at most %d (MTU %d, Ethernet header and VLAN tags)", len(frame), p.Name, max, mtu)
	}
	return nil
}
