package upf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/pfcp/agent"
)

// slowStats counts what the slow path did.
type slowStats struct {
	EchoReplies        uint64 `json:"echo_replies"`
	ErrorIndications   uint64 `json:"error_indications_sent"`
	ErrorIndLimited    uint64 `json:"error_indications_limited"`
	ErrorIndReceived   uint64 `json:"error_indications_reported"`
	EndMarkers         uint64 `json:"end_markers_sent"`
	BufferReleased     uint64 `json:"buffer_released"`
	BufferDrops        uint64 `json:"buffer_drops"`
	NeighRequests      uint64 `json:"neighbour_requests"`
	NeighLearned       uint64 `json:"neighbours_learned"`
	NeighDrops         uint64 `json:"neighbour_drops"`
	Reports            uint64 `json:"reports"`
	ReportsUndelivered uint64 `json:"reports_undelivered"`
	// UsageReset: URRs whose counter blocks an upgrade reset (a changed
	// layout) under a measurement: it restarts from the empty blocks; what
	// was counted since the URR's last report is lost (counters.go).
	UsageReset uint64 `json:"urr_usage_reset"`
}

var errNoHandle = errors.New("no handle to the datapath outside the engine's calls")

// HandlePunt is the slow path.
func (ctl *controller) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.handle = h
	defer func() { ctl.handle = nil }()
	complete := len(p.Frame) == p.PktLen
	switch p.Reason {
	case puntEcho:
		ctl.echo(p)
	case puntNoTEID:
		ctl.errorIndication(p)
	case puntErrInd:
		ctl.errorIndicationIn(p)
	case puntEndMarker:
		// An end marker from a peer closes its tunnel towards us; nothing
		// to relay (the UPF is not an intermediate one for it).
	case puntBuff:
		ctl.buffer(p.Arg, p.Frame, complete)
	case puntNOCP:
		ctl.downlinkData(p.Arg)
	case puntURR:
		ctl.urrEvent(p.Arg)
	case puntNeigh:
		ctl.neigh.miss(ctl, int(p.Arg), p.Frame, complete)
	case puntNeighIn:
		ctl.neigh.neighIn(ctl, p.InPort, p.Frame)
	}
}

// Tick runs the timers: usage periods and time thresholds, neighbour
// retries.
func (ctl *controller) Tick(h cube.Handle, c *cube.Cube, now time.Time) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.handle = h
	defer func() { ctl.handle = nil }()
	if ctl.cfg == nil {
		return
	}
	ctl.tickUsage(now)
	ctl.tickDrain()
	ctl.neigh.tick(ctl)
	ctl.errIndTokens = min(float64(ctl.cfg.ErrorIndicationRate), ctl.errIndTokens+float64(ctl.cfg.ErrorIndicationRate))
}

// echo answers a GTP-U Echo Request.
func (ctl *controller) echo(p cube.Punt) {
	f, ok := parseUDPFrame(p.Frame)
	if !ok || len(f.l4) < 8 || f.l4[1] != 1 {
		return
	}
	name, port, ok := ctl.portByIndex(p.InPort)
	if !ok || name == model.PortN6 {
		return
	}
	out := udpFrame(port.mac, f.srcMAC, netip.AddrPortFrom(f.dst, gtpPort), netip.AddrPortFrom(f.src, f.sport), gtpEchoResponse(f.l4))
	if ctl.handle.Transmit(p.InPort, out) == nil {
		ctl.slow.EchoReplies++
	}
}

// errorIndication tells the sender of a G-PDU for an unknown TEID, within
// the cube's rate.
func (ctl *controller) errorIndication(p cube.Punt) {
	f, ok := parseUDPFrame(p.Frame)
	if !ok {
		return
	}
	_, port, ok := ctl.portByIndex(p.InPort)
	if !ok {
		return
	}
	if ctl.errIndTokens < 1 {
		ctl.slow.ErrorIndLimited++
		return
	}
	ctl.errIndTokens--
	out := udpFrame(port.mac, f.srcMAC, netip.AddrPortFrom(f.dst, gtpPort), netip.AddrPortFrom(f.src, f.sport),
		gtpErrorIndication(p.Arg, f.dst))
	if ctl.handle.Transmit(p.InPort, out) == nil {
		ctl.slow.ErrorIndications++
	}
}

// errorIndicationIn reports to the SMF that a peer has no context for one
// of the session's downlink tunnels.
func (ctl *controller) errorIndicationIn(p cube.Punt) {
	f, ok := parseUDPFrame(p.Frame)
	if !ok {
		return
	}
	teid, peer, ok := parseErrorIndication(f.l4)
	if !ok {
		return
	}
	seid, ok := ctl.tunnels[tunnelKey{peer, teid}]
	if !ok {
		return
	}
	ctl.slow.ErrorIndReceived++
	ctl.emit(agent.Event{Kind: agent.EventErrorIndication, SEID: seid,
		Tunnel: model.OuterHeader{TEID: teid, Address: peer.String()}})
}

// downlinkData reports the first packet of a FAR that notifies.
func (ctl *controller) downlinkData(idx uint32) {
	r, ok := ctl.ruleOf[idx]
	if !ok {
		return
	}
	st := ctl.sessions[r.seid]
	if st == nil {
		return
	}
	key := ruleKeyOf(r.id)
	qfi := st.rules[key].v.QFI
	if pdr := st.sess.Pdr(key.PDR); pdr != nil {
		for _, q := range pdr.QERs {
			if qer := st.sess.Qer(q); qer != nil && qer.QFI != 0 {
				qfi = qer.QFI
				break
			}
		}
	}
	ctl.emit(agent.Event{Kind: agent.EventDownlinkData, SEID: r.seid, PDR: key.PDR, QFI: qfi})
}

// emit hands an event to the PFCP agent.
func (ctl *controller) emit(ev agent.Event) {
	if ev.Kind == agent.EventUsage {
		ctl.slow.Reports += uint64(len(ev.Usage))
	}
	if ctl.agent == nil || !ctl.agent.Notify(ev) {
		ctl.slow.ReportsUndelivered++
	}
}

// SendEndMarker implements agent.Datapath.
func (ctl *controller) SendEndMarker(t model.OuterHeader, port string) {
	if ctl.store == nil {
		return
	}
	_ = ctl.store.Do(func(h cube.Handle) error {
		ctl.mu.Lock()
		defer ctl.mu.Unlock()
		ctl.handle = h
		defer func() { ctl.handle = nil }()
		p, ok := ctl.ports[port]
		peer, err := netip.ParseAddr(t.Address)
		if !ok || err != nil {
			return nil
		}
		k, ok := ctl.nextHop(p, peer)
		mac, known := ctl.neigh.known[k]
		if !ok || !known {
			return nil
		}
		self := p.v4.Addr()
		if peer.Is6() {
			self = p.v6.Addr()
		}
		if !self.IsValid() {
			return nil
		}
		out := udpFrame(p.mac, mac, netip.AddrPortFrom(self, gtpPort), netip.AddrPortFrom(peer, gtpPort), gtpEndMarker(t.TEID))
		if h.Transmit(p.index, out) == nil {
			ctl.slow.EndMarkers++
		}
		return nil
	})
}

// TEIDInUse implements agent.Datapath: a TEID of the chosen range is in
// use when its slot is.
func (ctl *controller) TEIDInUse(teid uint32) bool {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	k := listKey{keyTEID, uint64(teidKey(teid))}
	if sl, ok := ctl.chosenSlot(k); ok {
		_, used := ctl.slotTEID[sl]
		return used
	}
	_, ok := ctl.keyOwner[k]
	return ok
}

// UEAddrInUse implements agent.Datapath.
func (ctl *controller) UEAddrInUse(a netip.Addr) bool {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	var k listKey
	if a.Is4() {
		b := a.As4()
		k = listKey{keyUE4, uint64(binary.NativeEndian.Uint32(b[:]))}
	} else {
		b := a.As16()
		k = listKey{keyUE6, binary.NativeEndian.Uint64(b[:8])}
	}
	_, ok := ctl.keyOwner[k]
	return ok
}

// SessionByCP implements agent.Datapath.
func (ctl *controller) SessionByCP(addr netip.Addr, seid uint64) (uint64, bool) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	s, ok := ctl.byCP[cpKey{addr.String(), seid}]
	return s, ok
}

// SessionsOf implements agent.Datapath.
func (ctl *controller) SessionsOf(node string) []uint64 {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	var out []uint64
	for seid, st := range ctl.sessions {
		if st.sess.Node == node {
			out = append(out, seid)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// HasSession implements agent.Datapath.
func (ctl *controller) HasSession(seid uint64) bool {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	_, ok := ctl.sessions[seid]
	return ok
}

func macString(m [6]byte) string { return net.HardwareAddr(m[:]).String() }

func sortBy[T any](s []T, key func(T) string) {
	sort.Slice(s, func(i, j int) bool { return key(s[i]) < key(s[j]) })
}

func (p portInfo) String() string { return fmt.Sprintf("port %d", p.index) }
