package upf

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// The test network: gNB 198.18.1.2 / 2001:db8:1::2 on n3 (the UPF is .1),
// the data network's router 198.18.2.2 / 2001:db8:2::2 on n6; UEs in
// 198.19.0.0/16 and 2001:db8:100::/48.
const (
	gnbMAC = "02:00:00:00:0a:01"
	dnMAC  = "02:00:00:00:0b:01"
)

func testCube(hook datapath.Hook, sessions ...*model.Session) *cube.Cube {
	c := &cube.Cube{Name: "u1", Type: "upf", Hook: hook,
		Config: json.RawMessage(`{"ue_pools":[{"prefix":"198.19.0.0/16"},{"prefix":"2001:db8:100::/48"}]}`),
		Ports: []cube.Port{
			{Name: "n3", Index: 0, Addresses: []string{"198.18.1.1/24", "2001:db8:1::1/64"}},
			{Name: "n6", Index: 1, Addresses: []string{"198.18.2.1/24", "2001:db8:2::1/64"},
				Config: json.RawMessage(`{"gateway":"198.18.2.2","gateway6":"2001:db8:2::2"}`)},
		}}
	for _, s := range sessions {
		c.SetRow(TableSessions, s.Key(), nftest.Entry(s))
	}
	return c
}

func u32(v uint32) *uint32 { return &v }
func u64(v uint64) *uint64 { return &v }

// basicSession is a dual-stack UE with one uplink and one downlink PDR.
func basicSession(seid uint64, teid uint32, ue4, ue6 string, gnbTEID uint32) *model.Session {
	return &model.Session{SEID: seid,
		PDRs: []model.PDR{
			{ID: 1, Precedence: 100, Source: "access", FTEID: &model.FTEID{TEID: teid}, UEIPv4: ue4, UEIPv6: ue6,
				OuterHeaderRemoval: "gtp-u", FAR: 1, URRs: []uint32{1}},
			{ID: 2, Precedence: 100, Source: "core", UEIPv4: ue4, UEIPv6: ue6, FAR: 2, URRs: []uint32{1}, QERs: []uint32{1}},
		},
		FARs: []model.FAR{
			{ID: 1, Action: []string{"forw"}, Destination: "core"},
			{ID: 2, Action: []string{"forw"}, Destination: "access", OuterHeader: &model.OuterHeader{TEID: gnbTEID, Address: "198.18.1.2"}},
		},
		QERs: []model.QER{{ID: 1, QFI: 9}},
		URRs: []model.URR{{ID: 1, Measure: []string{"volume"}}},
	}
}

type rig struct {
	*nftest.Rig
	t   *testing.T
	ctl *controller
}

func newRig(t *testing.T, hook datapath.Hook, sessions ...*model.Session) *rig {
	t.Helper()
	return newRigOf(t, testCube(hook, sessions...))
}

// newRigOf is newRig for cube c.
func newRigOf(t *testing.T, c *cube.Cube) *rig {
	t.Helper()
	r := nftest.New(t, Type, c)
	rg := &rig{Rig: r, t: t, ctl: r.Ctl.(*controller)}
	rg.neighbour(0, "198.18.1.2", gnbMAC)
	rg.neighbour(0, "2001:db8:1::2", gnbMAC)
	rg.neighbour(1, "198.18.2.2", dnMAC)
	rg.neighbour(1, "2001:db8:2::2", dnMAC)
	return rg
}

func (r *rig) neighbour(port int, addr, mac string) {
	var m [6]byte
	copy(m[:], nftest.MAC(mac))
	if err := r.ctl.putNeighbour(nkey{port, netip.MustParseAddr(addr)}, m); err != nil {
		r.t.Fatal(err)
	}
}

// inner builds an IP packet (no Ethernet header).
func inner(ls ...gopacket.SerializableLayer) []byte {
	eth := &layers.Ethernet{SrcMAC: nftest.MAC(gnbMAC), DstMAC: nftest.MAC(gnbMAC), EthernetType: layers.EthernetTypeIPv4}
	if _, v6 := ls[0].(*layers.IPv6); v6 {
		eth.EthernetType = layers.EthernetTypeIPv6
	}
	b := nftest.Serialize(append([]gopacket.SerializableLayer{eth}, ls...)...)[14:]
	// without the Ethernet padding of short frames
	if b[0]>>4 == 4 {
		return b[:binary.BigEndian.Uint16(b[2:])]
	}
	return b[:40+binary.BigEndian.Uint16(b[4:])]
}

func udpPkt(src, dst string, sport, dport uint16, payload []byte) []byte {
	s, d := net.ParseIP(src), net.ParseIP(dst)
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	if s.To4() != nil {
		return inner(&layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: s, DstIP: d}, udp, gopacket.Payload(payload))
	}
	return inner(&layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: s, DstIP: d}, udp, gopacket.Payload(payload))
}

// gtp wraps an IP packet in GTP-U to the UPF's n3 address (of the inner
// packet's family unless outer6), with a PDU Session Container when qfi.
func gtp(outer6 bool, teid uint32, qfi uint8, pkt []byte) []byte {
	h := []byte{0x30, 0xff, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(h[4:], teid)
	if qfi != 0 {
		h[0] |= 0x04
		h = append(h, 0, 0, 0, 0x85, 1, 0x10, qfi, 0)
	}
	binary.BigEndian.PutUint16(h[2:], uint16(len(h)-8+len(pkt)))
	payload := append(h, pkt...)
	if outer6 {
		return udpFrameFrom(gnbMAC, "2001:db8:1::2", "2001:db8:1::1", 2152, payload)
	}
	return udpFrameFrom(gnbMAC, "198.18.1.2", "198.18.1.1", 2152, payload)
}

// udpFrameFrom builds an Ethernet/IP/UDP frame from mac to the UPF.
func udpFrameFrom(mac, src, dst string, port uint16, payload []byte) []byte {
	s, d := net.ParseIP(src), net.ParseIP(dst)
	eth := &layers.Ethernet{SrcMAC: nftest.MAC(mac), DstMAC: nftest.MAC("02:00:00:00:00:99"), EthernetType: layers.EthernetTypeIPv4}
	udp := &layers.UDP{SrcPort: layers.UDPPort(port), DstPort: layers.UDPPort(port)}
	if s.To4() != nil {
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: s, DstIP: d}
		return nftest.Serialize(eth, ip, udp, gopacket.Payload(payload))
	}
	eth.EthernetType = layers.EthernetTypeIPv6
	ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: s, DstIP: d}
	return nftest.Serialize(eth, ip, udp, gopacket.Payload(payload))
}

func decode(b []byte) gopacket.Packet {
	return gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
}

// nonZero lists the counters that are not zero (for failure messages).
func (r *rig) nonZero() []Counter {
	var out []Counter
	for _, c := range r.ctl.counters() {
		if c.Value != 0 {
			out = append(out, c)
		}
	}
	return out
}

func (r *rig) stat(name string) uint64 {
	for _, c := range r.ctl.counters() {
		if c.Name == name {
			return c.Value
		}
	}
	r.t.Fatalf("no counter %s", name)
	return 0
}

func TestUplinkDecapsulation(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			r := newRig(t, hook, basicSession(1, 0x100, "198.19.0.5", "2001:db8:100:5::/64", 0x9000))
			for _, tc := range []struct {
				name   string
				outer6 bool
				pkt    []byte
			}{
				{"v4-in-v4", false, udpPkt("198.19.0.5", "198.51.100.7", 4000, 53, []byte("hello"))},
				{"v6-in-v4", false, udpPkt("2001:db8:100:5::1", "2001:db8:ff::7", 4000, 53, []byte("hello6"))},
				{"v4-in-v6", true, udpPkt("198.19.0.5", "198.51.100.7", 4000, 53, []byte("hello"))},
				{"v6-in-v6", true, udpPkt("2001:db8:100:5::1", "2001:db8:ff::7", 4000, 53, []byte("hello6"))},
			} {
				res := r.Run("n3", gtp(tc.outer6, 0x100, 9, tc.pkt))
				if res.Port != 1 {
					t.Fatalf("%s: verdict %d port %d, want out of n6; counters %v", tc.name, res.Verdict, res.Port, r.nonZero())
				}
				if !bytes.Equal(res.Data[14:], tc.pkt) {
					t.Fatalf("%s: inner packet changed:\n got %x\nwant %x", tc.name, res.Data[14:], tc.pkt)
				}
				eth := decode(res.Data).Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
				if eth.DstMAC.String() != dnMAC || eth.SrcMAC.String() != macString(r.ctl.ports["n6"].mac) {
					t.Fatalf("%s: MACs %s -> %s", tc.name, eth.SrcMAC, eth.DstMAC)
				}
			}
			if got := r.stat("ul_packets"); got != 4 {
				t.Fatalf("ul_packets %d", got)
			}
		})
	}
}

// A tenant's upf listens for PFCP only on an interface the tenant was
// given: its N4 address names the interface holding it (lo here).
func TestTenantPFCPAddressNeedsItsInterface(t *testing.T) {
	e := nftest.Engine(t)
	err := e.UpdateAs(context.Background(), tenant.Of("acme"), func(tp *cube.Topology, s tenant.Scope) error {
		c := testCube(datapath.XDP)
		c.Tenant = "acme"
		c.Config = json.RawMessage(`{"pfcp":{"address":"127.0.0.1","port":1}}`)
		return tp.AddCube(c)
	})
	if !errors.Is(err, cube.ErrForbidden) || !strings.Contains(err.Error(), `"lo" is not assigned to tenant acme`) {
		t.Fatalf("a tenant's N4 endpoint on lo: %v", err)
	}
}
