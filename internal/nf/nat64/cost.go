package nat64

import (
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The NAT64's cost model, from what the datapath does with a packet of an
// open mapping (nat64.bpf.c). Towards IPv4 (ingress, from the hosts): the
// mapping looked up by the host's address and port (BIB, a hash), the
// session by outside port and remote (a hash) and its timer refreshed, the
// 40-byte IPv6 header replaced by a 20-byte IPv4 one (the frame shrinks at
// its head), the IPv4 header checksum computed and the L4 one adjusted
// incrementally. Towards IPv6 (egress, the replies): the same lookups from
// the IPv4 side, the frame grows by 20 bytes, the host's MAC address put
// back. A TCP segment also steps its session's state machine. A frame
// neither for the prefix nor for the pool passes after the parse. Neither
// the number of mappings (hash lookups) nor the payload (incremental
// checksums) changes the cost; a flow's first packet, which claims a pool
// port and inserts the mapping and session, costs more and is not priced.
const (
	termPass = "nat64.pass"
	termTo4  = "nat64.to4"
	termTo6  = "nat64.to6"
	termTCP  = "nat64.tcp"
)

func init() {
	estimate.Register(&estimate.Model{Type: "nat64",
		Terms: []estimate.Term{
			{Name: termPass, Doc: "a frame not for translation (IPv6 outside the prefix, IPv4 outside the pool), passed"},
			{Name: termTo4, Doc: "an IPv6 packet of an open mapping translated to IPv4: mapping and session looked up, header 40 → 20 bytes, checksums"},
			{Name: termTo6, Doc: "an IPv4 reply of an open session translated to IPv6: mapping and session looked up, header 20 → 40 bytes, checksums"},
			{Name: termTCP, Doc: "a TCP segment's extra: its session's state machine stepped"},
		},
		Uses:  costUses,
		Cases: costCases,
	})
}

// costUses prices a UDP packet of an open mapping in the direction in
// ("ingress": towards IPv4, "egress": towards IPv6; unknown: the dearer).
func costUses(p *estimate.Profile, c *cube.Cube, in string) ([]estimate.Use, []string, error) {
	if _, err := decodeConfig(c); err != nil {
		return nil, nil, err
	}
	to4 := []estimate.Use{{Term: termTo4, N: 1, What: "nat64: IPv6 → IPv4"}}
	to6 := []estimate.Use{{Term: termTo6, N: 1, What: "nat64: IPv4 → IPv6"}}
	note := "a UDP packet of an open mapping (TCP adds its state machine; a flow's first packet also claims a pool port)"
	switch in {
	case datapath.Ingress.String():
		return to4, []string{note}, nil
	case datapath.Egress.String():
		return to6, []string{note}, nil
	}
	if p != nil && p.Price(to6).Total > p.Price(to4).Total {
		return to6, []string{note + ", the dearer direction"}, nil
	}
	return to4, []string{note + ", the dearer direction"}, nil
}

// Addresses of the cases: a host behind the NAT64, a server it reaches
// through the well-known prefix, the pool.
const (
	costHost    = "2001:db8:1::10"
	costServer4 = "198.18.0.1"
	costServer6 = "64:ff9b::c612:1" // 64:ff9b::198.18.0.1
	costPool    = "198.19.64.1"
)

// costCases are the calibration cases, or with holdout others: flows a
// host opened (its first packets run as warm frames), measured in either
// direction.
func costCases(holdout bool) []estimate.Case {
	// sessions outlive a calibration however long its loading takes: a
	// TCP opening's 240 s did not under load, and its ACK, dropped, was
	// measured instead (120 ns for the 175 of a translation)
	const day = 86400
	c := &cube.Cube{Name: "n64", Type: "nat64", Config: estimate.Row(Config{Pool: costPool, Timeouts: &Timeouts{UDP: day, TCPTransitory: day, TCPEstablished: day}})}
	out := func(proto string, sport uint16, flags string, size int) []byte {
		return estimate.Frame(estimate.FrameSpec{Src: costHost, Dst: costServer6, Proto: proto, Sport: sport, Dport: 53, TCPFlags: flags, Size: size})
	}
	back := func(proto string, dport uint16, flags string, size int) []byte {
		return estimate.Frame(estimate.FrameSpec{Src: costServer4, Dst: costPool, Proto: proto, Sport: 53, Dport: dport, TCPFlags: flags, Size: size})
	}
	// others opens n more mappings beside the measured one
	others := func(n int) [][]byte {
		var ws [][]byte
		for i := 0; i < n; i++ {
			ws = append(ws, out("udp", uint16(20000+i), "", 0))
		}
		return ws
	}
	mk := func(name string, dir datapath.Direction, frame []byte, uses []estimate.Use, warm ...[]byte) estimate.Case {
		// a translation changes the skb's protocol (bpf_skb_change_proto)
		cs := estimate.Case{Name: name, Cube: c, Dir: dir, Frame: frame, Uses: uses, Warm: warm, ChangesSkb: uses[0].Term != termPass}
		if dir == datapath.Egress {
			cs.WarmPort = datapath.Ingress.String() // the host opens the flow
		}
		return cs
	}
	to4 := []estimate.Use{{Term: termTo4, N: 1}}
	to6 := []estimate.Use{{Term: termTo6, N: 1}}
	tcp := estimate.Use{Term: termTCP, N: 1}
	pass := []estimate.Use{{Term: termPass, N: 1}}
	if holdout {
		return []estimate.Case{
			mk("to IPv4, UDP, 1,000 other mappings", datapath.Ingress, out("udp", 5000, "", 0), to4, append(others(1000), out("udp", 5000, "", 0))...),
			mk("to IPv6, 200-byte UDP reply", datapath.Egress, back("udp", 5000, "", 200), to6, out("udp", 5000, "", 0)),
			mk("to IPv4, 200-byte TCP segment", datapath.Ingress, out("tcp", 40000, "PA", 200), append(to4, tcp), out("tcp", 40000, "S", 0)),
		}
	}
	return []estimate.Case{
		mk("to IPv4, UDP", datapath.Ingress, out("udp", 5000, "", 0), to4),
		mk("to IPv4, 200-byte UDP", datapath.Ingress, out("udp", 5000, "", 200), to4),
		mk("to IPv4, TCP", datapath.Ingress, out("tcp", 40000, "A", 0), append(to4, tcp), out("tcp", 40000, "S", 0)),
		mk("to IPv6, UDP reply", datapath.Egress, back("udp", 5000, "", 0), to6, out("udp", 5000, "", 0)),
		mk("to IPv6, TCP SYN-ACK reply", datapath.Egress, back("tcp", 40000, "SA", 0), append(to6, tcp), out("tcp", 40000, "S", 0)),
		mk("IPv4 outside the pool, passed", datapath.Egress, estimate.Frame(estimate.FrameSpec{Src: costServer4, Dst: "198.18.7.7", Sport: 53, Dport: 9}), pass),
		mk("IPv6 outside the prefix, passed", datapath.Ingress, estimate.Frame(estimate.FrameSpec{Src: costHost, Dst: "2001:db8:2::1", Sport: 9, Dport: 53}), pass),
	}
}
