package engine

// Sweeps run off the engine's lock (controllers.go): they get duplicates
// of a cube's map handles, which stay valid whatever a change does to the
// cube meanwhile (a closed handle's number could be reused by another
// object: a sweep would then walk the wrong map).

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// dupMaps are duplicates of the maps of one loaded program, shared by the
// calls in flight without the engine's lock and kept for the next while
// the program is the cube's. refs counts those calls, and one more while
// the cube holds them (l.dups): the last release closes them, with or
// without the engine's lock (a punt worker releases without it).
type dupMaps struct {
	of   *datapath.Program
	maps map[string]*ebpf.Map
	refs atomic.Int32
}

// dups returns the duplicates of l's maps, made if l's program changed,
// with one more reference. Called with e.mu held.
func (e *Engine) dups(l *live) (*dupMaps, error) {
	if l.dups != nil && l.dups.of != l.dc {
		l.dups.release()
		l.dups = nil
	}
	if l.dups == nil {
		d := &dupMaps{of: l.dc, maps: map[string]*ebpf.Map{}}
		for name, m := range l.dc.Maps() {
			c, err := m.Clone()
			if err != nil {
				d.close()
				return nil, fmt.Errorf("map %s: %w", name, err)
			}
			d.maps[name] = c
		}
		d.refs.Store(1) // l's
		l.dups = d
	}
	l.dups.refs.Add(1)
	return l.dups, nil
}

// release drops a reference; the last closes the duplicates.
func (d *dupMaps) release() {
	if d.refs.Add(-1) == 0 {
		d.close()
	}
}

func (d *dupMaps) close() {
	for _, m := range d.maps {
		m.Close()
	}
	d.maps = nil
}

// dropDups drops l's reference to its duplicates (l goes, or the engine
// closes): the calls still in flight keep them until they end.
func dropDups(l *live) {
	if l.dups != nil {
		l.dups.release()
		l.dups = nil
	}
}

// offLock is the handle of a call made without the engine's lock (a Sweep,
// an Unlocked view, a punt, an action): duplicated maps, and what else the
// call may ask, read when the call began; nil fields answer "not
// available".
type offLock struct {
	dups  *dupMaps
	log   *slog.Logger
	ctl   cube.Controller
	point string
	addrs []netip.Prefix // a cube port's addresses (an interface's: read when asked)
	iface string         // the point, when it is an interface
	ifs   map[int]int    // port → ifindex of the ports peered with an interface
	// packet I/O, for punts and actions (nil for sweeps and views)
	io   *packetIO
	dp   *datapath.Datapath
	hook datapath.Hook
	slot uint32
	hops map[int]datapath.Hop
}

// detached returns the off-lock handle of a call into l; with io it may
// send packets. Called with e.mu held; the caller releases it with release.
func (e *Engine) detached(l *live, io bool) (*offLock, error) {
	d, err := e.dups(l)
	if err != nil {
		return nil, err
	}
	h := &offLock{dups: d, log: e.log, ctl: l.ctl, ifs: map[int]int{}}
	h.point = e.current().AttachedTo(l.dc.Name)
	if ep, err := cube.ParseEndpoint(h.point); err == nil && !ep.IsCube() {
		h.iface = ep.Iface
	} else if h.point != "" {
		_, h.addrs = (&handle{e: e, l: l}).AttachPoint()
	}
	for port, hop := range l.hops {
		if hop.Kind == datapath.DstIface {
			h.ifs[port] = int(hop.Ifindex)
		}
	}
	if io {
		h.io, h.dp, h.hook, h.slot = e.pio, e.dp, l.dc.Hook, l.dc.Slot
		h.hops = maps.Clone(l.hops)
	}
	return h, nil
}

// release gives back the handle's maps (takes e.mu).
func (h *offLock) release(e *Engine) {
	e.mu.Lock()
	h.dups.release()
	e.mu.Unlock()
}

func (h *offLock) Map(name string) (*ebpf.Map, error) {
	m, ok := h.dups.maps[name]
	if !ok {
		return nil, fmt.Errorf("cube %s has no map %q", h.dups.of.Name, name)
	}
	return m, nil
}

func (h *offLock) Logf(format string, args ...any) {
	h.log.Info(fmt.Sprintf(format, args...), "cube", h.dups.of.Name)
}

func (h *offLock) PortIface(port int) (*net.Interface, bool) {
	idx, ok := h.ifs[port]
	if !ok {
		return nil, false
	}
	i, err := net.InterfaceByIndex(idx)
	return i, err == nil
}

func (h *offLock) AttachPoint() (string, []netip.Prefix) {
	if h.iface != "" {
		return h.point, ifaceAddrs(h.iface)
	}
	return h.point, h.addrs
}

// Controller is nil in a Sweep, which is a method of the controller.
func (h *offLock) Controller() cube.Controller { return h.ctl }

var errOffLock = errors.New("not available without the engine's lock (a sweep or an unlocked view)")

func (h *offLock) Inject(port int, frame []byte) error {
	if h.hops == nil {
		return errOffLock
	}
	return h.io.inject(h.hook, datapath.Hop{Kind: datapath.DstCube, Slot: h.slot, Port: uint32(port)}, frame)
}

func (h *offLock) Transmit(port int, frame []byte) error {
	if h.hops == nil {
		return errOffLock
	}
	hop, ok := h.hops[port]
	if !ok || hop.Kind == datapath.DstNone {
		return fmt.Errorf("port %d of %s is not peered", port, h.dups.of.Name)
	}
	return h.io.inject(h.hook, hop, frame)
}

func (h *offLock) PrepareRedirect(ifindex int) error {
	if h.dp == nil {
		return errOffLock
	}
	return h.dp.EnsureRedirectTarget(ifindex)
}
