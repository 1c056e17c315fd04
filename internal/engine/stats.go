package engine

// Packet counters of cubes, ports, interfaces and the copy machine.

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/tenant"
)

// PortStats are the counters of one port.
type PortStats struct {
	Port  string `json:"port"`
	Index int    `json:"index"`
	// PeerDown says why the port's peering with a Linux interface is down
	// (the interface is missing: deleted, or moved to another namespace).
	PeerDown string `json:"peer_down,omitempty"`
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
	out := &CubeStats{Cube: name, SlowCopies: l.slowCopies.Load()}
	if l.typ.Transparent {
		out.Directions = map[string]datapath.Stats{"ingress": raw[0], "egress": raw[1]}
		out.Total.Add(raw[0])
		out.Total.Add(raw[1])
		return out, nil
	}
	for _, p := range l.c.Ports {
		out.Ports = append(out.Ports, PortStats{Port: p.Name, Index: p.Index, PeerDown: e.peerDown(p.Peer), Stats: raw[p.Index]})
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
	l.slowCopies.Store(0)
	return l.dc.ResetStats()
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
		if why := e.ifaceDown[iface]; why != "" {
			return nil, cube.NotFound("interface", "edgenf has no program on interface %q: %s", iface, why)
		}
		return nil, cube.NotFound("interface", "edgenf has no program on interface %q", iface)
	}
	return out, nil
}
