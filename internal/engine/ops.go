package engine

import (
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/tenant"
)

// handle is what a controller gets: its own cube's objects and packet I/O.
type handle struct {
	e *Engine
	l *live
}

func (h *handle) Map(name string) (*ebpf.Map, error) { return h.l.dc.Map(name) }

func (h *handle) Inject(port int, frame []byte) error {
	hop := datapath.Hop{Kind: datapath.DstCube, Slot: h.l.dc.Slot, Port: uint32(port)}
	return h.e.slow.inject(h.l.dc.Hook, hop, frame)
}

func (h *handle) Transmit(port int, frame []byte) error {
	hop, ok := h.l.hops[port]
	if !ok || hop.Kind == datapath.DstNone {
		return fmt.Errorf("port %d of %s is not peered", port, h.l.dc.Name)
	}
	return h.e.slow.inject(h.l.dc.Hook, hop, frame)
}

func (h *handle) PortIface(port int) (*net.Interface, bool) {
	hop, ok := h.l.hops[port]
	if !ok || hop.Kind != datapath.DstIface {
		return nil, false
	}
	i, err := net.InterfaceByIndex(int(hop.Ifindex))
	return i, err == nil
}

func (h *handle) PrepareRedirect(ifindex int) error { return h.e.dp.EnsureRedirectTarget(ifindex) }

func (h *handle) Logf(format string, args ...any) {
	h.e.log.Info(fmt.Sprintf(format, args...), "cube", h.l.dc.Name)
}

// PortStats are the counters of one port.
type PortStats struct {
	Port  string `json:"port"`
	Index int    `json:"index"`
	datapath.Stats
}

// CubeStats are a cube's counters: per port, and in total.
type CubeStats struct {
	Cube  string         `json:"cube"`
	Ports []PortStats    `json:"ports,omitempty"`
	Total datapath.Stats `json:"total"`
	// Directions of a transparent cube: ingress and egress.
	Directions map[string]datapath.Stats `json:"directions,omitempty"`
	// SlowCopies: copies of packets (P4 clone, multicast) the fast path
	// could not make in the kernel and the daemon sent for it.
	SlowCopies uint64 `json:"slow_copies"`
}

// Stats reads a cube's counters.
func (e *Engine) Stats(who tenant.Actor, name string) (*CubeStats, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.live(who, name)
	if err != nil {
		return nil, err
	}
	raw, err := l.dc.Stats()
	if err != nil {
		return nil, err
	}
	out := &CubeStats{Cube: name, SlowCopies: l.slowCopies}
	if l.typ.Transparent {
		out.Directions = map[string]datapath.Stats{"ingress": raw[0], "egress": raw[1]}
		out.Total.Add(raw[0])
		out.Total.Add(raw[1])
		return out, nil
	}
	for _, p := range l.c.Ports {
		out.Ports = append(out.Ports, PortStats{Port: p.Name, Index: p.Index, Stats: raw[p.Index]})
	}
	for _, s := range raw {
		out.Total.Add(s)
	}
	return out, nil
}

// ResetStats zeroes a cube's counters.
func (e *Engine) ResetStats(who tenant.Actor, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.live(who, name)
	if err != nil {
		return err
	}
	l.slowCopies = 0
	return l.dc.ResetStats()
}

// View reads one of a cube's read-only views.
func (e *Engine) View(who tenant.Actor, name, view string) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.live(who, name)
	if err != nil {
		return nil, err
	}
	if l.down != "" {
		return nil, downErr(l)
	}
	for _, v := range l.typ.Views {
		if v.Name == view {
			return v.List(&handle{e: e, l: l}, l.c)
		}
	}
	return nil, cube.NotFound("view", "NF type %s has no view %q", l.typ.Name, view)
}

// Action runs an operation on a cube.
func (e *Engine) Action(who tenant.Actor, name, action string, args json.RawMessage) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.live(who, name)
	if err != nil {
		return nil, err
	}
	if l.down != "" {
		return nil, downErr(l)
	}
	for _, a := range l.typ.Actions {
		if a.Name != action {
			continue
		}
		var v any
		if a.Args != nil {
			var err error
			if v, err = cube.Decode("args", args, a.Args); err != nil {
				return nil, err
			}
		}
		return a.Do(&handle{e: e, l: l}, l.c, v)
	}
	return nil, cube.NotFound("action", "NF type %s has no action %q", l.typ.Name, action)
}

// Swap reloads a cube's program, from obj or (nil) from its NF type, keeping
// its maps; one patch-panel update switches traffic to the new program.
// Only the administrator loads an object of its own: a tenant's cubes run
// the programs of their NF types or P4 programs the daemon compiled.
func (e *Engine) Swap(who tenant.Actor, name string, obj []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.live(who, name)
	if err != nil {
		return err
	}
	if obj != nil && !who.IsAdmin() {
		return cube.Forbidden("object", "only an administrator swaps in an eBPF object; a tenant's cubes run their NF type's program or a P4 program the daemon compiled")
	}
	if l.down != "" {
		return downErr(l)
	}
	if obj == nil {
		var err error
		if obj, err = l.typ.ObjectOf(l.c); err != nil {
			return err
		}
	}
	spec, err := datapath.LoadSpec(obj)
	if err != nil {
		return cube.Errorf("object", "%v", err)
	}
	dc, err := e.dp.LoadCube(name, l.dc.Hook, l.dc.Slot, spec, nil)
	if err != nil {
		return cube.Errorf("object", "%v", err)
	}
	l.dc.Close()
	l.dc = dc
	// Interfaces entered directly into the cube run a copy of the old
	// program: give them the new one.
	return e.reconcile(e.topo, false)
}

// Inject sends a frame into a cube port as if received (out=false) or out of
// the port to its peer (out=true).
func (e *Engine) Inject(who tenant.Actor, name string, port string, frame []byte, out bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.live(who, name)
	if err != nil {
		return err
	}
	if l.down != "" {
		return downErr(l)
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
	if inj := e.slow.inj.MaxFrame(); max > inj {
		max = inj
	}
	if len(frame) > max {
		return cube.Conflict("frame", "%d bytes is longer than port %s carries: at most %d (MTU %d, Ethernet header and VLAN tags)", len(frame), p.Name, max, mtu)
	}
	return nil
}

// CopyStats reads the counters of the copy machine, which makes at TC the
// copies XDP programs record (P4 clone and multicast).
func (e *Engine) CopyStats() (datapath.CopyStats, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dp.CopyStats()
}

// IfaceStats reads the counters of the stubs on an interface.
func (e *Engine) IfaceStats(iface string) (map[string]datapath.Stats, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]datapath.Stats{}
	for k, s := range e.stubs {
		if k.Iface != iface {
			continue
		}
		st, err := s.Stats()
		if err != nil {
			return nil, err
		}
		out[fmt.Sprintf("%s-%s", k.Hook, k.Dir)] = st
	}
	if len(out) == 0 {
		return nil, cube.NotFound("interface", "edgenf has no program on interface %q", iface)
	}
	return out, nil
}

// tick runs the periodic work of controllers that have any.
func (e *Engine) tick(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, l := range e.cubes {
		if t, ok := l.ctl.(cube.Ticker); ok {
			t.Tick(&handle{e: e, l: l}, l.c, now)
		}
	}
}

// punt hands a punted packet to its cube's controller.
func (e *Engine) punt(hook datapath.Hook, slot uint32, p cube.Punt) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.bySlot[slot]
	if l == nil || l.dc.Hook != hook {
		return
	}
	if p.Reason == datapath.PuntTransmit {
		// a copy the fast path could not make (copy.h): out of port Arg
		l.slowCopies++
		if err := (&handle{e: e, l: l}).Transmit(int(p.Arg), p.Frame); err != nil {
			e.log.Debug("slow-path copy not sent", "cube", l.c.Name, "port", p.Arg, "err", err)
		}
		return
	}
	if ph, ok := l.ctl.(cube.PuntHandler); ok {
		ph.HandlePunt(&handle{e: e, l: l}, l.c, p)
	}
}

// Controller exposes the cube's controller to its NF type's views and
// actions.
func (h *handle) Controller() cube.Controller { return h.l.ctl }

// WithHandle runs fn with the engine's lock held and the handle of a cube
// who may see: for the daemon's own services around a cube (a capture's
// reader opens the cube's ring).
func (e *Engine) WithHandle(who tenant.Actor, name string, fn func(h cube.Handle) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.live(who, name)
	if err != nil {
		return err
	}
	if l.down != "" {
		return downErr(l)
	}
	return fn(&handle{e: e, l: l})
}
