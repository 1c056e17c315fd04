package upf

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
)

// Next-hop resolution. The fast path finds the MAC address of a packet's
// next hop (the port's gateway, else the destination: a gNB or UPF for
// tunnels, a host for n6) in upf_neigh, filled here from the ARP and NDP
// traffic it copies to the slow path. A packet whose next hop is unknown is
// punted ready but for its destination MAC; it waits here (bounded) while
// an ARP request or neighbour solicitation goes out, and leaves when the
// answer comes. Tunnel peers and gateways are asked for ahead of traffic.

const (
	// Packets waiting per next hop: as many as one session may have
	// buffered, released at once towards a gNB not resolved yet.
	neighQueue   = 1024
	neighQueued  = 16384 // packets waiting in all
	neighPending = 1024  // next hops being resolved
	neighTries   = 3
	neighRetry   = 250 * time.Millisecond
)

type nkey struct {
	port int
	addr netip.Addr
}

type waiting struct {
	frames [][]byte
	tries  int
	last   time.Time
}

type neighbours struct {
	known   map[nkey][6]byte
	pending map[nkey]*waiting
	queued  int
	now     func() time.Time
}

func newNeighbours() *neighbours {
	return &neighbours{known: map[nkey][6]byte{}, pending: map[nkey]*waiting{}, now: time.Now}
}

func neighMapKey(k nkey) kNeighKey {
	mk := kNeighKey{Port: uint32(k.port)}
	if k.addr.Is4() {
		a := k.addr.As4()
		copy(mk.Addr[:], a[:])
	} else {
		mk.Port |= 0x100
		mk.Addr = k.addr.As16()
	}
	return mk
}

// adopt reads the entries an earlier daemon learned.
func (n *neighbours) adopt(ctl *controller) {
	var k kNeighKey
	var v kNeigh
	it := ctl.maps.neigh.Iterate()
	for it.Next(&k, &v) {
		var a netip.Addr
		if k.Port&0x100 != 0 {
			a = netip.AddrFrom16(k.Addr)
		} else {
			a = netip.AddrFrom4([4]byte(k.Addr[:4]))
		}
		n.known[nkey{int(k.Port & 0xff), a}] = v.MAC
	}
}

// sync resolves the ports' gateways.
func (n *neighbours) sync(ctl *controller) {
	if len(n.known) == 0 {
		n.adopt(ctl)
	}
	for _, p := range ctl.ports {
		for _, gw := range []netip.Addr{p.gw4, p.gw6} {
			if gw.IsValid() {
				n.ask(ctl, nkey{p.index, gw})
			}
		}
	}
}

// sessionChanged resolves the peers of a session's tunnels ahead of
// traffic.
func (n *neighbours) sessionChanged(ctl *controller, st *sessState) {
	for _, f := range st.sess.FARs {
		if f.OuterHeader == nil || f.Port == "" {
			continue
		}
		p, ok := ctl.ports[f.Port]
		if !ok {
			continue
		}
		if k, ok := ctl.nextHop(p, netip.MustParseAddr(f.OuterHeader.Address)); ok {
			n.ask(ctl, k)
		}
	}
}

// nextHop is where a packet to dst leaving by port p goes next.
func (ctl *controller) nextHop(p portInfo, dst netip.Addr) (nkey, bool) {
	if dst.Is4() && p.gw4.IsValid() {
		return nkey{p.index, p.gw4}, true
	}
	if dst.Is6() && p.gw6.IsValid() {
		return nkey{p.index, p.gw6}, true
	}
	if (dst.Is4() && p.v4.IsValid() && p.v4.Contains(dst)) || (dst.Is6() && p.v6.IsValid() && p.v6.Contains(dst)) {
		return nkey{p.index, dst}, true
	}
	return nkey{}, false
}

// ask sends a request for k unless it is known or already asked for.
func (n *neighbours) ask(ctl *controller, k nkey) {
	if _, ok := n.known[k]; ok {
		return
	}
	if w := n.pending[k]; w != nil {
		return
	}
	if len(n.pending) >= neighPending {
		return
	}
	w := &waiting{}
	n.pending[k] = w
	n.request(ctl, k, w)
}

func (n *neighbours) request(ctl *controller, k nkey, w *waiting) {
	w.tries++
	w.last = n.now()
	_, p, ok := ctl.portByIndex(k.port)
	if !ok || ctl.handle == nil {
		return
	}
	var f []byte
	switch {
	case k.addr.Is4() && p.v4.IsValid():
		f = arpRequest(p.mac, p.v4.Addr(), k.addr)
	case k.addr.Is6() && p.v6.IsValid():
		f = neighbourSolicitation(p.mac, p.v6.Addr(), k.addr)
	default:
		return
	}
	if err := ctl.handle.Transmit(k.port, f); err == nil {
		ctl.slow.NeighRequests++
	}
}

// miss queues a frame the fast path could not address and asks for its
// next hop.
func (n *neighbours) miss(ctl *controller, port int, fr []byte, complete bool) {
	_, p, ok := ctl.portByIndex(port)
	dst, ok2 := frameDst(fr)
	if !ok || !ok2 || !complete {
		ctl.slow.NeighDrops++
		return
	}
	k, ok := ctl.nextHop(p, dst)
	if !ok {
		ctl.slow.NeighDrops++
		return
	}
	if mac, ok := n.known[k]; ok { // learned since the fast path looked
		copy(fr[0:6], mac[:])
		n.send(ctl, port, fr)
		return
	}
	w := n.pending[k]
	if w == nil {
		if len(n.pending) >= neighPending {
			ctl.slow.NeighDrops++
			return
		}
		w = &waiting{}
		n.pending[k] = w
		n.request(ctl, k, w)
	}
	if len(w.frames) >= neighQueue || n.queued >= neighQueued {
		ctl.slow.NeighDrops++
		return
	}
	w.frames = append(w.frames, fr)
	n.queued++
}

func (n *neighbours) send(ctl *controller, port int, fr []byte) {
	if ctl.handle == nil || ctl.handle.Transmit(port, fr) != nil {
		ctl.slow.NeighDrops++
	}
}

// frameDst is the IP destination of a frame.
func frameDst(b []byte) (netip.Addr, bool) {
	if len(b) < 14 {
		return netip.Addr{}, false
	}
	switch binary.BigEndian.Uint16(b[12:]) {
	case 0x0800:
		if len(b) >= 34 {
			return netip.AddrFrom4([4]byte(b[30:34])), true
		}
	case 0x86dd:
		if len(b) >= 54 {
			return netip.AddrFrom16([16]byte(b[38:54])), true
		}
	}
	return netip.Addr{}, false
}

// putNeighbour writes a next hop's MAC address into upf_neigh, then bumps
// upf_neigh_gen: the fast path's per-CPU copies of entries found in an
// older generation are not used again.
func (ctl *controller) putNeighbour(k nkey, mac [6]byte) error {
	if err := ctl.maps.neigh.Put(neighMapKey(k), kNeigh{MAC: mac}); err != nil {
		return err
	}
	var gen uint64
	if err := ctl.maps.neighGen.Lookup(uint32(0), &gen); err != nil {
		return err
	}
	return ctl.maps.neighGen.Put(uint32(0), gen+1)
}

// learn records that addr is at mac on port, if addr is a next hop of that
// port (on one of its subnets, or its gateway), and sends what waited.
func (n *neighbours) learn(ctl *controller, port int, addr netip.Addr, mac [6]byte) {
	_, p, ok := ctl.portByIndex(port)
	if !ok || mac[0]&1 != 0 || mac == [6]byte{} {
		return
	}
	if k, ok := ctl.nextHop(p, addr); !ok || k.addr != addr {
		return
	}
	k := nkey{port, addr}
	if old, ok := n.known[k]; !ok || old != mac {
		if err := ctl.putNeighbour(k, mac); err != nil {
			return
		}
		n.known[k] = mac
		ctl.slow.NeighLearned++
	}
	if w := n.pending[k]; w != nil {
		delete(n.pending, k)
		n.queued -= len(w.frames)
		for _, fr := range w.frames {
			copy(fr[0:6], mac[:])
			n.send(ctl, port, fr)
		}
	}
}

// neighIn learns from an ARP packet or neighbour discovery message the fast
// path copied.
func (n *neighbours) neighIn(ctl *controller, port int, b []byte) {
	if len(b) < 14 {
		return
	}
	switch binary.BigEndian.Uint16(b[12:]) {
	case 0x0806:
		if len(b) < 42 {
			return
		}
		var mac [6]byte
		copy(mac[:], b[22:28])
		n.learn(ctl, port, netip.AddrFrom4([4]byte(b[28:32])), mac)
	case 0x86dd:
		if len(b) < 14+40+24 || b[20] != 58 {
			return
		}
		icmp := b[54:]
		src := netip.AddrFrom16([16]byte(b[22:38]))
		target := netip.AddrFrom16([16]byte(icmp[8:24]))
		// options: source (1) / target (2) link-layer address
		for opts := icmp[24:]; len(opts) >= 8 && opts[1] > 0 && int(opts[1])*8 <= len(opts); opts = opts[int(opts[1])*8:] {
			var mac [6]byte
			copy(mac[:], opts[2:8])
			switch {
			case icmp[0] == 135 && opts[0] == 1 && !src.IsUnspecified():
				n.learn(ctl, port, src, mac)
			case icmp[0] == 136 && opts[0] == 2:
				n.learn(ctl, port, target, mac)
			}
		}
	}
}

// tick retries unanswered requests and gives up after a few.
func (n *neighbours) tick(ctl *controller) {
	now := n.now()
	for k, w := range n.pending {
		// 250 ms, then 500 ms: a request sent before the port was
		// wired up is not waited for a whole second.
		if now.Sub(w.last) < neighRetry<<max(w.tries-1, 0) {
			continue
		}
		if w.tries >= neighTries {
			ctl.slow.NeighDrops += uint64(len(w.frames))
			n.queued -= len(w.frames)
			delete(n.pending, k)
			continue
		}
		n.request(ctl, k, w)
	}
}

// NeighbourInfo is a learned next hop.
type NeighbourInfo struct {
	Port    string `json:"port"`
	Address string `json:"address"`
	MAC     string `json:"mac"`
}

func listNeighbours(h cube.Handle, c *cube.Cube) (any, error) {
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	out := []NeighbourInfo{}
	for k, mac := range ctl.neigh.known {
		name, _, _ := ctl.portByIndex(k.port)
		out = append(out, NeighbourInfo{Port: name, Address: k.addr.String(), MAC: macString(mac)})
	}
	sortBy(out, func(a NeighbourInfo) string { return a.Port + " " + a.Address })
	return out, nil
}
