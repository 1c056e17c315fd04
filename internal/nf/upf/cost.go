package upf

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// The upf's cost model: an uplink G-PDU from n3 is matched by its TEID
// (and its PDRs' filters), decapsulated and forwarded to n6; a downlink
// packet from n6 is matched by its UE address and encapsulated to its gNB
// on n3. Both count usage (URRs) and apply QERs. The session count may
// deepen the lookups (upf.sessions.log2; the fit says how much, over
// calibration cases of 1 to 20,000 sessions). Like every case, those send
// one session's packet again and again, its entries in cache: traffic
// spread over many sessions also pays cache and TLB misses, which no term
// prices (BenchmarkPerPacketScale measures them).
const (
	termUplink   = "upf.uplink"
	termDownlink = "upf.downlink"
	termSessions = "upf.sessions.log2"
)

func init() {
	estimate.Register(&estimate.Model{Type: "upf",
		Terms: []estimate.Term{
			{Name: termUplink, Doc: "an uplink G-PDU decapsulated to n6 (TEID lookup, PDR, FAR, URR)"},
			{Name: termDownlink, Doc: "a downlink packet encapsulated to its gNB on n3 (UE lookup, PDR, FAR, QER, URR)"},
			{Name: termSessions, Doc: "per log2(sessions+1) of the lookups"},
		},
		Uses: costUses,
		Cases: func(holdout bool) []estimate.Case {
			// the fit sees the scale term over the range the held-out
			// cases are inside of (1 to 20,000 sessions)
			if holdout {
				return []estimate.Case{costCase("uplink", 100), costCase("downlink", 100), costCase("downlink", 5000), costCase("uplink", 12000)}
			}
			return []estimate.Case{costCase("uplink", 1), costCase("uplink", 1000), costCase("downlink", 1), costCase("downlink", 1000),
				costCase("uplink", 20000), costCase("downlink", 20000)}
		},
	})
}

func costUses(_ *estimate.Profile, c *cube.Cube, in string) ([]estimate.Use, []string, error) {
	n := len(c.Tables[TableSessions])
	what := fmt.Sprintf("upf: %d sessions", n)
	dir, term, note := "uplink", termUplink, "an uplink G-PDU (n3 → n6)"
	if p := c.Port(in); p != nil && p.Name != "n3" {
		dir, term, note = "downlink", termDownlink, "a downlink packet ("+p.Name+" → n3)"
	}
	if in == "" {
		note += "; the direction of a chain's hop decides"
	}
	return []estimate.Use{{Term: term, N: 1, What: "upf: " + dir}, {Term: termSessions, N: estimate.Log2(n), What: what}}, []string{note}, nil
}

const (
	costGNB    = "198.18.1.2"
	costGNBMAC = "02:00:00:00:0a:01"
	costDNGW   = "198.18.2.2"
	costDNMAC  = "02:00:00:00:0b:01"
)

// costCube is a upf with n sessions, UE i at 198.19.i/16 with TEID 0x100+i.
func costCube(n int) *cube.Cube {
	c := &cube.Cube{Name: "u1", Type: "upf",
		Config: json.RawMessage(`{"ue_pools":[{"prefix":"198.19.0.0/16"}]}`),
		Ports: []cube.Port{
			{Name: "n3", Index: 0, Addresses: []string{"198.18.1.1/24"}},
			{Name: "n6", Index: 1, Addresses: []string{"198.18.2.1/24"}, Config: json.RawMessage(`{"gateway":"` + costDNGW + `"}`)},
		}}
	for i := 0; i < n; i++ {
		ue := netip.AddrFrom4([4]byte{198, 19, byte(i >> 8), byte(i)}).String()
		s := &model.Session{SEID: uint64(i + 1),
			PDRs: []model.PDR{
				{ID: 1, Precedence: 100, Source: "access", FTEID: &model.FTEID{TEID: uint32(0x100 + i)}, UEIPv4: ue,
					OuterHeaderRemoval: "gtp-u", FAR: 1, URRs: []uint32{1}},
				{ID: 2, Precedence: 100, Source: "core", UEIPv4: ue, FAR: 2, URRs: []uint32{1}, QERs: []uint32{1}},
			},
			FARs: []model.FAR{
				{ID: 1, Action: []string{"forw"}, Destination: "core"},
				{ID: 2, Action: []string{"forw"}, Destination: "access", OuterHeader: &model.OuterHeader{TEID: uint32(0x9000 + i), Address: costGNB}},
			},
			QERs: []model.QER{{ID: 1, QFI: 9}},
			URRs: []model.URR{{ID: 1, Measure: []string{"volume"}}},
		}
		c.SetRow(TableSessions, s.Key(), estimate.Row(s))
	}
	return c
}

// costNeighbours are what the slow path would have resolved: the gNB and
// the data network's gateway.
func costNeighbours(h cube.Handle) error {
	m, err := h.Map("upf_neigh")
	if err != nil {
		return err
	}
	for _, n := range []struct {
		port      int
		addr, mac string
	}{{0, costGNB, costGNBMAC}, {1, costDNGW, costDNMAC}} {
		var k kNeigh
		hw, _ := net.ParseMAC(n.mac)
		copy(k.MAC[:], hw)
		if err := m.Put(neighMapKey(nkey{n.port, netip.MustParseAddr(n.addr)}), k); err != nil {
			return err
		}
	}
	return nil
}

// costCase is the last UE's traffic in direction dir, among n sessions.
func costCase(dir string, n int) estimate.Case {
	ue := netip.AddrFrom4([4]byte{198, 19, byte((n - 1) >> 8), byte(n - 1)}).String()
	inner := estimate.Frame(estimate.FrameSpec{Src: ue, Dst: "198.51.100.7", Sport: 4000, Dport: 53, Size: 64})[14:]
	name := fmt.Sprintf("%s, %d sessions", dir, n)
	if n == 1 {
		name = dir + ", 1 session"
	}
	// ChangesSkb: at TC the decapsulation moves the skb's network header
	// (the restored frame's next one is taken off at the wrong offset),
	// the encapsulation marks the skb encapsulated (the next is refused)
	cs := estimate.Case{Name: name, Cube: costCube(n), Setup: costNeighbours, ChangesSkb: true}
	if dir == "uplink" {
		g := []byte{0x34, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x85, 1, 0x10, 9, 0}
		binary.BigEndian.PutUint32(g[4:], uint32(0x100+n-1))
		binary.BigEndian.PutUint16(g[2:], uint16(len(g)-8+len(inner)))
		cs.InPort = "n3"
		cs.Frame = estimate.Frame(estimate.FrameSpec{SrcMAC: costGNBMAC, DstMAC: "02:00:00:00:00:99", Src: costGNB, Dst: "198.18.1.1",
			Sport: 2152, Dport: 2152, Payload: append(g, inner...)})
		return cs
	}
	cs.InPort = "n6"
	cs.Frame = estimate.Frame(estimate.FrameSpec{SrcMAC: costDNMAC, DstMAC: "02:00:00:00:00:99", Src: "198.51.100.7", Dst: ue, Sport: 53, Dport: 4000})
	return cs
}
