package lb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/counters"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// tunnelModel is model() with the backends' ports addressed (the outer
// source of tunnel-mode packets): 2001:db8:2::1/64 and 198.18.2.1/24.
func tunnelModel(hook datapath.Hook, svcs ...Service) *cube.Cube {
	c := model(hook)
	for i := 1; i < len(c.Ports); i++ {
		c.Ports[i].Addresses = []string{"198.18.2.1/24", "2001:db8:2::1/64"}
	}
	for _, s := range svcs {
		s := s
		if err := s.Validate(c); err != nil {
			panic(err)
		}
		c.Tables["services"][s.Key()] = nftest.Entry(s)
	}
	return c
}

// TestTunnelIPv6InIPv6: a tunnel-mode IPv6 service sends each packet to its
// backend inside an outer IPv6 header (next header 41, hop limit 64, from
// the out port's address to the backend's, payload length the whole inner
// packet, the inner traffic class, one flow label per flow), the inner
// packet byte for byte as the client sent it; flows spread by weight and
// stick to their backend like DSR's.
func TestTunnelIPv6InIPv6(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, tunnelModel(h.hook, Service{VIP: vip6, Port: 80, Mode: "tunnel", TableSize: 4099, Backends: backends6(1, 3)}))
			per := map[int]int{}
			labels := map[uint32]bool{}
			for i := 0; i < 400; i++ {
				f := tcp6(client6, vip6, uint16(20000+i), 80, clientMAC, frontMAC)
				f[14], f[15] = 0x6b, 0x80 // version 6, traffic class 0xb8 (EF)
				res := r.Run("front", f)
				d := res.Data
				if res.Verdict != h.sent || res.Port < 1 || res.Port > 2 || len(d) != len(f)+40 {
					t.Fatalf("flow %d: verdict %d port %d, %d bytes from %d", i, res.Verdict, res.Port, len(d), len(f))
				}
				be := backends6(1, 3)[res.Port-1]
				if !bytes.Equal(d[0:6], nftest.MAC(be.MAC)) || binary.BigEndian.Uint16(d[12:]) != 0x86dd {
					t.Fatalf("flow %d: Ethernet header % x", i, d[:14])
				}
				o := d[14:54]
				label := binary.BigEndian.Uint32(o[0:4]) & 0xfffff
				if o[0]>>4 != 6 || (binary.BigEndian.Uint32(o[0:4])>>20)&0xff != 0xb8 || o[6] != 41 || o[7] != 64 ||
					int(binary.BigEndian.Uint16(o[4:])) != len(f)-14 || addr6(o[8:24]) != "2001:db8:2::1" || addr6(o[24:40]) != be.Address {
					t.Fatalf("flow %d: outer header % x", i, o)
				}
				if !bytes.Equal(d[54:], f[14:]) {
					t.Fatalf("flow %d: the inner packet changed", i)
				}
				labels[label] = true
				per[res.Port]++
				// The flow's next packet: same backend, same label.
				again := r.Run("front", f)
				if again.Port != res.Port || !bytes.Equal(again.Data, d) {
					t.Fatalf("flow %d: second packet to port %d, first to %d", i, again.Port, res.Port)
				}
			}
			if per[1] < 60 || per[1] > 140 || per[2] < 240 || per[2] > 340 {
				t.Errorf("flows per backend %v, want about 100:300", per)
			}
			if len(labels) < 300 {
				t.Errorf("%d distinct flow labels over 400 flows: ECMP on the way cannot spread them", len(labels))
			}
			// A decapsulating stack finds the client's segment inside.
			p := gopacket.NewPacket(r.Run("front", tcp6(client6, vip6, 999, 80, clientMAC, frontMAC)).Data, layers.LayerTypeEthernet, gopacket.Default)
			var ips []*layers.IPv6
			for _, l := range p.Layers() {
				if ip, ok := l.(*layers.IPv6); ok {
					ips = append(ips, ip)
				}
			}
			tcp, _ := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
			if len(ips) != 2 || !ips[1].SrcIP.Equal(net.ParseIP(client6)) || !ips[1].DstIP.Equal(net.ParseIP(vip6)) || tcp == nil || tcp.DstPort != 80 || !l4OK6(p.Data()[40:]) {
				t.Fatalf("not IPv6-in-IPv6 with the client's segment inside: %v", p)
			}
		})
	}
}

// TestTunnelIPv4InIPv4: the same for an IPv4 service: protocol 4, TTL 64,
// a valid header checksum, the inner DF bit and TOS copied, total length
// the inner packet's plus 20.
func TestTunnelIPv4InIPv4(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, tunnelModel(h.hook, Service{VIP: vip, Protocol: "udp", Port: 53, Mode: "tunnel", TableSize: 251, Backends: backends(1)}))
			f := udpFrame(client, vip, 4242, 53, clientMAC, frontMAC)
			f[15] = 0x28                               // TOS
			binary.BigEndian.PutUint16(f[20:], 0x4000) // DF
			nftest.FixIPv4Checksum(f)
			res := r.Run("front", f)
			d := res.Data
			if res.Verdict != h.sent || res.Port != 1 || len(d) != len(f)+20 || !bytes.Equal(d[0:6], nftest.MAC("02:00:00:00:be:01")) ||
				binary.BigEndian.Uint16(d[12:]) != 0x0800 {
				t.Fatalf("verdict %d port %d, % x", res.Verdict, res.Port, d[:14])
			}
			o := d[14:34]
			if o[0] != 0x45 || o[1] != 0x28 || int(binary.BigEndian.Uint16(o[2:])) != len(f)-14+20 || binary.BigEndian.Uint16(o[6:])&0x4000 == 0 ||
				o[8] != 64 || o[9] != 4 || !net.IP(o[12:16]).Equal(net.ParseIP("198.18.2.1")) || !net.IP(o[16:20]).Equal(net.ParseIP("198.18.2.11")) ||
				csum16(o, 0) != 0xffff {
				t.Fatalf("outer header % x", o)
			}
			if !bytes.Equal(d[34:], f[14:]) || !checksumsOK(append(append([]byte{}, d[:14]...), d[34:]...)) {
				t.Fatalf("the inner packet changed")
			}
			// Without DF the outer header needs an identification of its own.
			binary.BigEndian.PutUint16(f[20:], 0)
			nftest.FixIPv4Checksum(f)
			d = r.Run("front", f).Data
			if binary.BigEndian.Uint16(d[20:])&0x4000 != 0 || csum16(d[14:34], 0) != 0xffff {
				t.Fatalf("outer header without DF: % x", d[14:34])
			}
		})
	}
}

// TestTunnelRefusals: a tunnel service needs an address of its family on
// every backend's port (409, nothing stored); a frame that cannot be
// encapsulated (a VLAN tag in the frame) is dropped and counted, not sent
// bare to a backend that does not own the VIP.
func TestTunnelRefusals(t *testing.T) {
	c := model(datapath.XDP)
	c.Ports[1].Addresses = []string{"198.18.2.1/24"}
	_, _, err := servicesTable.DecodeEntry(c, nftest.Entry(Service{VIP: vip6, Port: 80, Mode: "tunnel", Backends: backends6(1)}))
	if !errors.Is(err, cube.ErrConflict) || !strings.Contains(err.Error(), "tables.services.backends[0].port: port b1 has no IPv6 address") {
		t.Fatalf("IPv6 tunnel service from a port without IPv6: %v", err)
	}
	if _, _, err := servicesTable.DecodeEntry(c, nftest.Entry(Service{VIP: vip, Port: 80, Mode: "tunnel", Backends: backends(1)})); err != nil {
		t.Fatalf("IPv4 tunnel service from a port with IPv4: %v", err)
	}
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, tunnelModel(h.hook, Service{VIP: vip, Port: 80, Mode: "tunnel", TableSize: 251, Backends: backends(1)}))
			tagged := nftest.VLANTagged(tcpFrame(client, vip, 1000, 80, clientMAC, frontMAC, true), 1)
			if res := r.Run("front", tagged); res.Verdict != h.drop {
				t.Fatalf("VLAN-tagged frame: verdict %d", res.Verdict)
			}
			n, err := lbCounters.Read(r.Handle())
			if err != nil || n[len(n)-1] != (counters.Counter{Name: "not_encapsulated", Value: 1}) {
				t.Fatalf("counters %v (%v)", n, err)
			}
		})
	}
}
