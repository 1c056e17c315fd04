package upf

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket/layers"
	"golang.org/x/sys/unix"
)

var hooks = []datapath.Hook{datapath.XDP, datapath.TC}

// fromDN is a frame from the data network's router to the UPF's n6.
func fromDN(pkt []byte) []byte {
	var eth []byte
	eth = append(eth, nftest.MAC("02:00:00:00:00:99")...)
	eth = append(eth, nftest.MAC(dnMAC)...)
	if pkt[0]>>4 == 6 {
		eth = append(eth, 0x86, 0xdd)
	} else {
		eth = append(eth, 0x08, 0x00)
	}
	return append(eth, pkt...)
}

// gtpOf reads the GTP-U encapsulation of a frame the UPF sent: outer
// destination, TEID, QFI (0 without a PDU Session Container) and the inner
// packet.
type gtpOut struct {
	dst   net.IP
	teid  uint32
	qfi   uint8
	inner []byte
	udp6  bool
}

func parseGTP(t *testing.T, b []byte) gtpOut {
	t.Helper()
	p := decode(b)
	var out gtpOut
	var payload []byte
	if v4, ok := p.NetworkLayer().(*layers.IPv4); ok {
		out.dst = v4.DstIP
		if v4.Flags&layers.IPv4DontFragment == 0 {
			t.Errorf("outer IPv4 without DF")
		}
		// header checksum
		h := b[14:34]
		if csumFold(csumAdd(0, h)) != 0 {
			t.Errorf("outer IPv4 header checksum wrong")
		}
	} else if v6, ok := p.NetworkLayer().(*layers.IPv6); ok {
		out.dst = v6.DstIP
		out.udp6 = true
	} else {
		t.Fatalf("not IP: %x", b)
	}
	udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if !ok || udp.DstPort != 2152 || udp.SrcPort != 2152 {
		t.Fatalf("not GTP-U over UDP 2152: %v", p)
	}
	if out.udp6 {
		src := b[22:38]
		dst := b[38:54]
		seg := b[54:]
		sum := csumAdd(csumAdd(0, src), dst) + uint32(len(seg)) + 17
		if csumFold(csumAdd(sum, seg)) != 0 {
			t.Errorf("outer UDP checksum over IPv6 wrong")
		}
	}
	payload = udp.Payload
	if len(payload) < 8 || payload[1] != 0xff {
		t.Fatalf("not a G-PDU: %x", payload)
	}
	if int(binary.BigEndian.Uint16(payload[2:]))+8 != len(payload) {
		t.Errorf("GTP-U length %d for %d octets", binary.BigEndian.Uint16(payload[2:]), len(payload))
	}
	out.teid = binary.BigEndian.Uint32(payload[4:])
	off := 8
	if payload[0]&0x07 != 0 {
		next := payload[11]
		off = 12
		for next != 0 {
			n := int(payload[off]) * 4
			if next == 0x85 {
				if payload[off+1]>>4 != 0 {
					t.Errorf("PDU Session Container of type %d, want DL (0)", payload[off+1]>>4)
				}
				out.qfi = payload[off+2] & 0x3f
			}
			next = payload[off+n-1]
			off += n
		}
	}
	out.inner = payload[off:]
	return out
}

func TestDownlinkEncapsulation(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			s4 := basicSession(1, 0x100, "198.19.0.5", "2001:db8:100:5::/64", 0x9000)
			s6 := basicSession(2, 0x200, "198.19.0.6", "2001:db8:100:6::/64", 0x9001)
			s6.FARs[1].OuterHeader.Address = "2001:db8:1::2" // an IPv6 gNB
			s6.QERs = nil
			s6.PDRs[1].QERs = nil
			r := newRig(t, hook, s4, s6)
			for _, tc := range []struct {
				name      string
				pkt       []byte
				teid      uint32
				qfi       uint8
				outer6    bool
				wantOuter string
			}{
				{"v4 UE, v4 gNB, QFI", udpPkt("198.51.100.7", "198.19.0.5", 53, 4000, []byte("answer")), 0x9000, 9, false, "198.18.1.2"},
				{"v6 UE, v4 gNB, QFI", udpPkt("2001:db8:ff::7", "2001:db8:100:5::1", 53, 4000, []byte("answer6")), 0x9000, 9, false, "198.18.1.2"},
				{"v4 UE, v6 gNB", udpPkt("198.51.100.7", "198.19.0.6", 53, 4000, []byte("to a v6 gNB")), 0x9001, 0, true, "2001:db8:1::2"},
				{"v6 UE, v6 gNB", udpPkt("2001:db8:ff::7", "2001:db8:100:6::9", 53, 4000, bytes.Repeat([]byte("x"), 1001)), 0x9001, 0, true, "2001:db8:1::2"},
			} {
				res := r.Run("n6", fromDN(tc.pkt))
				if res.Port != 0 {
					t.Fatalf("%s: verdict %d port %d, want out of n3; counters %v", tc.name, res.Verdict, res.Port, r.nonZero())
				}
				g := parseGTP(t, res.Data)
				if g.teid != tc.teid || g.qfi != tc.qfi || g.dst.String() != tc.wantOuter || g.udp6 != tc.outer6 {
					t.Fatalf("%s: GTP-U to %s TEID %#x QFI %d, want %s %#x %d", tc.name, g.dst, g.teid, g.qfi, tc.wantOuter, tc.teid, tc.qfi)
				}
				if !bytes.Equal(g.inner, tc.pkt) {
					t.Fatalf("%s: inner packet changed", tc.name)
				}
				if eth := decode(res.Data).Layer(layers.LayerTypeEthernet).(*layers.Ethernet); eth.DstMAC.String() != gnbMAC {
					t.Fatalf("%s: to MAC %s", tc.name, eth.DstMAC)
				}
			}
			// The URR counted the downlink IP packets.
			u := r.ctl.Usage(1, nil, 0)
			if len(u) != 1 || u[0].Volume.DLPkts != 2 || u[0].Volume.DLBytes != uint64(len(udpPkt("198.51.100.7", "198.19.0.5", 53, 4000, []byte("answer")))+len(udpPkt("2001:db8:ff::7", "2001:db8:100:5::1", 53, 4000, []byte("answer6")))) {
				t.Fatalf("usage %+v", u[0].Volume)
			}
		})
	}
}

func TestSDFFiltersSteerFlowsOfOneUE(t *testing.T) {
	s := basicSession(1, 0x100, "198.19.0.5", "", 0x9000)
	// Video from 198.51.100.0/24 ports 5000-5100 goes to another tunnel
	// (QFI 5), DNS over TCP is dropped, the rest takes the default PDR.
	s.PDRs = append(s.PDRs,
		model.PDR{ID: 3, Precedence: 10, Source: "core", UEIPv4: "198.19.0.5", FAR: 3, QERs: []uint32{2},
			SDF: []model.SDF{{FlowDescription: "permit out 17 from 198.51.100.0/24 5000-5100 to assigned"}}},
		model.PDR{ID: 4, Precedence: 20, Source: "core", UEIPv4: "198.19.0.5", FAR: 4,
			SDF: []model.SDF{{FlowDescription: "permit out 6 from any 53 to assigned"}}},
		model.PDR{ID: 5, Precedence: 10, Source: "access", FTEID: &model.FTEID{TEID: 0x100}, OuterHeaderRemoval: "gtp-u", FAR: 4,
			UEIPv4: "198.19.0.5", SDF: []model.SDF{{FlowDescription: "permit out 17 from 203.0.113.9 to assigned 7777"}}})
	s.FARs = append(s.FARs,
		model.FAR{ID: 3, Action: []string{"forw"}, Destination: "access", OuterHeader: &model.OuterHeader{TEID: 0x9555, Address: "198.18.1.2"}},
		model.FAR{ID: 4, Action: []string{"drop"}})
	s.QERs = append(s.QERs, model.QER{ID: 2, QFI: 5})
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			r := newRig(t, hook, s)
			tcp := func(src string, sport, dport uint16) []byte {
				return inner(&layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.ParseIP(src), DstIP: net.ParseIP("198.19.0.5")},
					&layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), SYN: true, Window: 100})
			}
			for _, tc := range []struct {
				name string
				pkt  []byte
				teid uint32 // 0: dropped
				qfi  uint8
			}{
				{"video", udpPkt("198.51.100.20", "198.19.0.5", 5050, 3000, []byte("v")), 0x9555, 5},
				{"video port out of range", udpPkt("198.51.100.20", "198.19.0.5", 5101, 3000, []byte("v")), 0x9000, 9},
				{"other source", udpPkt("198.51.101.20", "198.19.0.5", 5050, 3000, []byte("v")), 0x9000, 9},
				{"DNS over TCP", tcp("198.51.100.1", 53, 40000), 0, 0},
				{"web over TCP", tcp("198.51.100.1", 443, 40000), 0x9000, 9},
			} {
				res := r.Run("n6", fromDN(tc.pkt))
				if tc.teid == 0 {
					if res.Port != -1 {
						t.Fatalf("%s: forwarded, want dropped", tc.name)
					}
					continue
				}
				if res.Port != 0 {
					t.Fatalf("%s: not forwarded; counters %v", tc.name, r.nonZero())
				}
				if g := parseGTP(t, res.Data); g.teid != tc.teid || g.qfi != tc.qfi {
					t.Fatalf("%s: TEID %#x QFI %d, want %#x %d", tc.name, g.teid, g.qfi, tc.teid, tc.qfi)
				}
			}
			// Uplink: the UE's port 7777 towards 203.0.113.9 is dropped
			// (filters are written downlink, applied mirrored).
			if res := r.Run("n3", gtp(false, 0x100, 0, udpPkt("198.19.0.5", "203.0.113.9", 7777, 9, []byte("u")))); res.Port != -1 {
				t.Fatal("uplink filtered flow forwarded")
			}
			if res := r.Run("n3", gtp(false, 0x100, 0, udpPkt("198.19.0.5", "203.0.113.9", 7778, 9, []byte("u")))); res.Port != 1 {
				t.Fatal("uplink default flow not forwarded")
			}
			if got := r.stat("drop_far"); got != 2 {
				t.Fatalf("drop_far %d, want 2", got)
			}
		})
	}
}

func TestUplinkChecksAddressesAndQFI(t *testing.T) {
	s := basicSession(1, 0x100, "198.19.0.5", "", 0x9000)
	s.PDRs[0].QFI = []uint8{9}
	r := newRig(t, datapath.XDP, s)
	for _, tc := range []struct {
		name string
		pkt  []byte
		qfi  uint8
		out  int
	}{
		{"right", udpPkt("198.19.0.5", "198.51.100.7", 1, 2, nil), 9, 1},
		{"spoofed source", udpPkt("198.19.0.99", "198.51.100.7", 1, 2, nil), 9, -1},
		{"other QoS flow", udpPkt("198.19.0.5", "198.51.100.7", 1, 2, nil), 5, -1},
		{"no container", udpPkt("198.19.0.5", "198.51.100.7", 1, 2, nil), 0, -1},
	} {
		if res := r.Run("n3", gtp(false, 0x100, tc.qfi, tc.pkt)); res.Port != tc.out {
			t.Fatalf("%s: port %d, want %d", tc.name, res.Port, tc.out)
		}
	}
	if got := r.stat("drop_no_rule"); got != 3 {
		t.Fatalf("drop_no_rule %d", got)
	}
}

func TestMalformedAndForeignTraffic(t *testing.T) {
	r := newRig(t, datapath.XDP, basicSession(1, 0x100, "198.19.0.5", "", 0x9000))
	good := gtp(false, 0x100, 9, udpPkt("198.19.0.5", "198.51.100.7", 1, 2, []byte("x")))
	toUE := fromDN(udpPkt("198.51.100.7", "198.19.0.5", 1, 2, []byte("x")))
	// the frames as sent, but for their Ethernet header (edit: bytes
	// from offset 12 on) or their IPv4 total length
	withType := func(f []byte, b ...byte) []byte { return append(append(bytes.Clone(f[:12]), b...), f[14:]...) }
	longer := func(f []byte) []byte {
		b := bytes.Clone(f)
		b[17] += 8 // total length: past the frame's end
		return b
	}
	for _, tc := range []struct {
		name string
		port string
		f    []byte
		why  string
	}{
		{"truncated extension", "n3", good[:14+20+8+14], "drop_malformed"},
		{"GTPv2", "n3", func() []byte { b := bytes.Clone(good); b[42] = 0x48; return b }(), "drop_malformed"},
		{"to another address", "n3", udpFrameFrom(gnbMAC, "198.18.1.2", "198.18.1.99", 2152, good[42:]), "drop_not_gtp"},
		{"not GTP-U port", "n3", udpFrameFrom(gnbMAC, "198.18.1.2", "198.18.1.1", 2153, good[42:]), "drop_not_gtp"},
		{"plain IP on n3", "n3", fromDN(udpPkt("198.19.0.5", "198.18.1.1", 1, 2, nil)), "drop_not_gtp"},
		{"outer IPv4 longer than the frame", "n3", longer(good), "drop_malformed"},
		{"VLAN-tagged G-PDU", "n3", withType(good, 0x81, 0, 0, 5, 0x08, 0), "drop_malformed"},
		{"unknown UE on n6", "n6", fromDN(udpPkt("198.51.100.7", "198.19.9.9", 1, 2, nil)), "drop_no_session"},
		{"IPv4 longer than the frame on n6", "n6", longer(toUE), "drop_malformed"},
		{"VLAN-tagged on n6", "n6", withType(toUE, 0x81, 0, 0, 5, 0x08, 0), "drop_malformed"},
		// an IPv4 packet to the UE behind an ethertype that is not IPv4's
		{"IPv4 payload of another ethertype on n6", "n6", withType(toUE, 0x88, 0xb5), "drop_not_gtp"},
	} {
		port := tc.port
		before := r.stat(tc.why)
		if res := r.Run(port, tc.f); res.Port != -1 {
			t.Fatalf("%s forwarded", tc.name)
		}
		if r.stat(tc.why) != before+1 {
			t.Fatalf("%s: %s not counted; %v", tc.name, tc.why, r.nonZero())
		}
	}
}

func TestGateAndMBR(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			s := basicSession(1, 0x100, "198.19.0.5", "", 0x9000)
			// 8 kbit/s (1000 octets a second) with the smallest burst,
			// 3000 octets: the bucket refills by a few octets while the
			// test runs, so what passes does not depend on its speed.
			s.QERs[0].MBRDL = 8
			r := newRig(t, hook, s)
			pkt := udpPkt("198.51.100.7", "198.19.0.5", 1, 2, make([]byte, 972)) // 1000 octets
			sent := 0
			for range 100 {
				if res := r.Run("n6", fromDN(pkt)); res.Port == 0 {
					sent++
				}
			}
			// GCRA: a packet conforms while the bucket is at most its
			// tolerance (3 s of the rate) ahead of now: 4 packets of 1 s.
			if sent != 4 {
				t.Fatalf("%d of 100 back-to-back 1000-octet packets passed an 8 kbit/s MBR with a 3000-octet burst", sent)
			}
			if r.stat("drop_mbr") != uint64(100-sent) {
				t.Fatalf("drop_mbr %d", r.stat("drop_mbr"))
			}
			// Uplink has no MBR.
			for range 100 {
				if res := r.Run("n3", gtp(false, 0x100, 9, udpPkt("198.19.0.5", "198.51.100.7", 1, 2, make([]byte, 972)))); res.Port != 1 {
					t.Fatal("uplink policed")
				}
			}
			// Closing the downlink gate drops everything at once.
			s.QERs[0].GateDL = "closed"
			s.QERs[0].MBRDL = 0
			if err := r.Update(testCube(hook, s)); err != nil {
				t.Fatal(err)
			}
			if res := r.Run("n6", fromDN(pkt)); res.Port != -1 || r.stat("drop_gate") != 1 {
				t.Fatalf("gate closed, packet forwarded (%d) or not counted", res.Port)
			}
		})
	}
}

func TestURRThresholdAndQuota(t *testing.T) {
	s := basicSession(1, 0x100, "198.19.0.5", "", 0x9000)
	s.URRs[0] = model.URR{ID: 1, Measure: []string{"volume"}, Triggers: []string{"volume_threshold", "volume_quota"},
		VolumeThreshold: &model.Volume{Total: u64(2500)}, VolumeQuota: &model.Volume{Downlink: u64(5000)}}
	r := newRig(t, datapath.XDP, s)
	pkt := fromDN(udpPkt("198.51.100.7", "198.19.0.5", 1, 2, make([]byte, 972))) // 1000 octets of IP
	idx := r.ctl.sessions[1].urrs[1].idx
	k := func() kURR {
		var v kURR
		if err := r.ctl.maps.urrs.Lookup(idx, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for i := range 5 {
		if res := r.Run("n6", pkt); res.Port != 0 {
			t.Fatalf("packet %d of the quota dropped", i)
		}
	}
	if v := k(); v.Th[0] != 2500-5000 || v.Q[2] != 0 {
		t.Fatalf("threshold left %d, quota left %d", v.Th[0], v.Q[2])
	}
	// The threshold's event: a report of what was counted, then a new
	// measurement with the threshold re-armed.
	r.ctl.urrEvent(idx)
	if got := r.ctl.slow.Reports; got != 1 {
		t.Fatalf("%d reports", got)
	}
	// The quota is used up: the next downlink packet is dropped.
	if res := r.Run("n6", pkt); res.Port != -1 || r.stat("drop_quota") != 1 {
		t.Fatal("packet beyond the quota forwarded")
	}
	// A new quota from the SMF lets traffic through again.
	s.URRs[0].VolumeQuota = &model.Volume{Downlink: u64(10000)}
	if err := r.Update(testCube(datapath.XDP, s)); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("n6", pkt); res.Port != 0 {
		t.Fatal("new quota not applied")
	}
}

func TestBufferThenForwardInOrder(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			s := basicSession(1, 0x100, "198.19.0.5", "", 0x9000)
			s.FARs[1].Action = []string{"buff", "nocp"}
			r := newRig(t, hook, s)
			rule := r.ctl.sessions[1].rules[ruleKey{2, 0}].idx
			var frames [][]byte
			for i := range 5 {
				f := fromDN(udpPkt("198.51.100.7", "198.19.0.5", 1, 2, []byte{byte(i)}))
				frames = append(frames, f)
				res := r.Run("n6", f)
				if res.Port != -1 {
					t.Fatal("buffered packet forwarded")
				}
				// The kernel punted it: hand it to the slow path.
				r.ctl.HandlePunt(r.Handle(), r.Model, cube.Punt{InPort: 1, Reason: puntBuff, Arg: rule, PktLen: len(f), Frame: f})
			}
			// NOCP: one notification, however many packets.
			var far kFAR
			if err := r.ctl.maps.fars.Lookup(r.ctl.sessions[1].fars[2].idx, &far); err != nil || far.Notified != 1 {
				t.Fatalf("NOCP flag %d %v", far.Notified, err)
			}
			if got := r.stat("buffered"); got != 5 {
				t.Fatalf("buffered %d", got)
			}
			// The SMF says forward: the buffered packets go back into the
			// fast path, in order, through port 63.
			s.FARs[1].Action = []string{"forw"}
			if err := r.Update(testCube(hook, s)); err != nil {
				t.Fatal(err)
			}
			if len(r.Injected) != 5 {
				t.Fatalf("%d packets released", len(r.Injected))
			}
			for i, in := range r.Injected {
				if in.Port != portRelease {
					t.Fatalf("released into port %d", in.Port)
				}
				res, err := r.DP.Run(r.Prog, portRelease, in.Data)
				if err != nil {
					t.Fatal(err)
				}
				if res.Port != 0 {
					t.Fatalf("released packet %d not forwarded; %v", i, r.nonZero())
				}
				g := parseGTP(t, res.Data)
				if !bytes.Equal(g.inner, frames[i][14:]) {
					t.Fatalf("released packet %d out of order or changed", i)
				}
			}
			if r.ctl.slow.BufferReleased != 5 || len(r.ctl.buffers.bySession) != 0 {
				t.Fatalf("released %d, left %v", r.ctl.slow.BufferReleased, r.ctl.buffers.bySession)
			}
		})
	}
}

func TestBufferBounds(t *testing.T) {
	s := basicSession(1, 0x100, "198.19.0.5", "", 0x9000)
	s.FARs[1].Action = []string{"buff"}
	s.FARs[1].BAR = new(uint8)
	s.BARs = []model.BAR{{ID: 0, SuggestedPackets: 3}}
	r := newRig(t, datapath.XDP, s)
	rule := r.ctl.sessions[1].rules[ruleKey{2, 0}].idx
	for range 5 {
		f := fromDN(udpPkt("198.51.100.7", "198.19.0.5", 1, 2, nil))
		r.ctl.HandlePunt(r.Handle(), r.Model, cube.Punt{InPort: 1, Reason: puntBuff, Arg: rule, PktLen: len(f), Frame: f})
	}
	if n := len(r.ctl.buffers.bySession[1]); n != 3 || r.ctl.slow.BufferDrops != 2 {
		t.Fatalf("buffered %d, dropped %d: want the BAR's 3 and 2", n, r.ctl.slow.BufferDrops)
	}
	// A FAR that now drops discards them.
	s.FARs[1].Action = []string{"drop"}
	if err := r.Update(testCube(datapath.XDP, s)); err != nil {
		t.Fatal(err)
	}
	if len(r.Injected) != 0 || r.ctl.buffers.total != 0 {
		t.Fatal("buffer not discarded")
	}
}

func TestUnknownTEIDErrorIndicationRateLimited(t *testing.T) {
	r := newRig(t, datapath.XDP, basicSession(1, 0x100, "198.19.0.5", "", 0x9000))
	f := gtp(false, 0xdead, 0, udpPkt("198.19.0.5", "198.51.100.7", 1, 2, nil))
	// The kernel lets one punt through per half of the configured
	// interval (1/10 s by default) per CPU: a second packet on the same
	// CPU within that gap is only counted. The runs stay on one CPU; a
	// pair the machine's load spread over more than the gap proves
	// nothing and is tried again.
	const gap = time.Second / model.DefaultErrIndRate / 2
	onOneCPU(t)
	for try := 0; ; try++ {
		punts, noTEID := r.Stats()[0].PuntPackets, r.stat("no_teid")
		start := time.Now()
		res := r.Run("n3", f)
		r.Run("n3", f)
		if time.Since(start) >= gap && try < 20 {
			time.Sleep(gap)
			continue
		}
		if res.Port != -1 || r.Stats()[0].PuntPackets != punts+1 || r.stat("no_teid") != noTEID+2 {
			t.Fatalf("two packets for an unknown TEID at once: %d punted (want 1), %d counted (want 2), the first to port %d",
				r.Stats()[0].PuntPackets-punts, r.stat("no_teid")-noTEID, res.Port)
		}
		break
	}
	r.ctl.errIndTokens = 10
	r.Transmitted = nil
	r.ctl.HandlePunt(r.Handle(), r.Model, cube.Punt{InPort: 0, Reason: puntNoTEID, Arg: 0xdead, PktLen: len(f), Frame: f})
	if len(r.Transmitted) != 1 {
		t.Fatalf("%d frames sent", len(r.Transmitted))
	}
	p := decode(r.Transmitted[0].Data)
	udp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if ip.DstIP.String() != "198.18.1.2" || ip.SrcIP.String() != "198.18.1.1" || udp.DstPort != 2152 {
		t.Fatalf("error indication to %s:%d from %s", ip.DstIP, udp.DstPort, ip.SrcIP)
	}
	teid, peer, ok := parseErrorIndication(udp.Payload)
	if !ok || teid != 0xdead || peer.String() != "198.18.1.1" {
		t.Fatalf("error indication %x: %v %#x %s", udp.Payload, ok, teid, peer)
	}
	// Past the rate, no more.
	r.ctl.errIndTokens = 0
	r.ctl.HandlePunt(r.Handle(), r.Model, cube.Punt{InPort: 0, Reason: puntNoTEID, Arg: 0xdead, PktLen: len(f), Frame: f})
	if len(r.Transmitted) != 1 || r.ctl.slow.ErrorIndLimited != 1 {
		t.Fatal("error indication beyond the rate")
	}
}

// onOneCPU keeps the test's goroutine on the CPU it runs on until the
// test ends: per-CPU state of the datapath (BPF_PROG_TEST_RUN runs on the
// caller's CPU) is then one CPU's.
func onOneCPU(t *testing.T) {
	restore, err := pinToThisCPU()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore)
}

// pinToThisCPU locks the calling goroutine to its thread and the thread to
// the CPU it runs on; restore undoes both.
func pinToThisCPU() (restore func(), err error) {
	runtime.LockOSThread()
	var was, one unix.CPUSet
	var cpu uint32 // x/sys/unix has no getcpu wrapper
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
		runtime.UnlockOSThread()
		return nil, e
	}
	one.Set(int(cpu))
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return func() {
		unix.SchedSetaffinity(0, &was)
		runtime.UnlockOSThread()
	}, nil
}

func TestEchoRequestAnswered(t *testing.T) {
	r := newRig(t, datapath.XDP)
	echo := []byte{0x32, 1, 0, 4, 0, 0, 0, 0, 0x12, 0x34, 0, 0}
	for _, v6 := range []bool{false, true} {
		r.Transmitted = nil
		var f []byte
		if v6 {
			f = udpFrameFrom(gnbMAC, "2001:db8:1::2", "2001:db8:1::1", 2152, echo)
		} else {
			f = udpFrameFrom(gnbMAC, "198.18.1.2", "198.18.1.1", 2152, echo)
		}
		if res := r.Run("n3", f); res.Port != -1 {
			t.Fatal("echo request forwarded")
		}
		r.ctl.HandlePunt(r.Handle(), r.Model, cube.Punt{InPort: 0, Reason: puntEcho, PktLen: len(f), Frame: f})
		if len(r.Transmitted) != 1 || r.Transmitted[0].Port != 0 {
			t.Fatal("no echo response")
		}
		b := r.Transmitted[0].Data
		g, ok := parseUDPFrame(b)
		if !ok || g.l4[1] != 2 || g.l4[8] != 0x12 || g.l4[9] != 0x34 || g.l4[12] != 14 {
			t.Fatalf("echo response %x", g.l4)
		}
		if !bytes.Equal(b[0:6], nftest.MAC(gnbMAC)) || g.dst.String() != map[bool]string{false: "198.18.1.2", true: "2001:db8:1::2"}[v6] {
			t.Fatalf("echo response to %x %s", b[0:6], g.dst)
		}
	}
}

func TestARPAndNeighbourDiscovery(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			r := newRig(t, hook)
			res := r.Run("n3", nftest.ARPRequest(gnbMAC, "198.18.1.2", "198.18.1.1"))
			if res.Port != 0 {
				t.Fatal("ARP request for the n3 address not answered")
			}
			arp := decode(res.Data).Layer(layers.LayerTypeARP).(*layers.ARP)
			if arp.Operation != layers.ARPReply || net.IP(arp.SourceProtAddress).String() != "198.18.1.1" ||
				net.HardwareAddr(arp.SourceHwAddress).String() != macString(r.ctl.ports["n3"].mac) {
				t.Fatalf("ARP reply %+v", arp)
			}
			if res := r.Run("n3", nftest.ARPRequest(gnbMAC, "198.18.1.2", "198.18.1.77")); res.Port != -1 {
				t.Fatal("ARP for another address answered")
			}
			// A neighbour solicitation for the n3 IPv6 address.
			ns := neighbourSolicitation([6]byte(nftest.MAC(gnbMAC)), netip.MustParseAddr("2001:db8:1::2"), netip.MustParseAddr("2001:db8:1::1"))
			res = r.Run("n3", ns)
			if res.Port != 0 {
				t.Fatalf("NS not answered; %v", r.nonZero())
			}
			p := decode(res.Data)
			na, ok := p.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement)
			ip6 := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
			if !ok || na.TargetAddress.String() != "2001:db8:1::1" || ip6.DstIP.String() != "2001:db8:1::2" || ip6.HopLimit != 255 {
				t.Fatalf("neighbour advertisement %v", p)
			}
			icmp := res.Data[54:]
			sum := csumAdd(csumAdd(0, res.Data[22:38]), res.Data[38:54]) + uint32(len(icmp)) + 58
			if csumFold(csumAdd(sum, icmp)) != 0 {
				t.Fatal("NA checksum wrong")
			}
		})
	}
}

func TestNextHopResolutionQueuesAndReleases(t *testing.T) {
	s := basicSession(1, 0x100, "198.19.0.5", "", 0x9000)
	s.FARs[1].OuterHeader.Address = "198.18.1.3" // a gNB nobody has resolved
	r := newRig(t, datapath.XDP, s)
	f := fromDN(udpPkt("198.51.100.7", "198.19.0.5", 1, 2, []byte("q")))
	res := r.Run("n6", f)
	if res.Port != -1 || r.stat("neighbour_misses") != 1 {
		t.Fatal("packet to an unresolved gNB not punted")
	}
	// The punted frame is complete but for its destination MAC.
	out := res.Data
	r.ctl.HandlePunt(r.Handle(), r.Model, cube.Punt{InPort: 1, Reason: puntNeigh, Arg: 0, PktLen: len(out), Frame: out})
	// The gNB was asked for when the session named it.
	asked := false
	for _, f := range r.Transmitted {
		if f.Port == 0 && binary.BigEndian.Uint16(f.Data[12:]) == 0x0806 && bytes.Equal(f.Data[38:42], []byte{198, 18, 1, 3}) {
			asked = true
		}
	}
	if !asked {
		t.Fatalf("no ARP request for the gNB sent: %v", r.Transmitted)
	}
	r.Transmitted = nil
	// The gNB answers: learned, and the packet leaves.
	n3mac := r.ctl.ports["n3"].mac
	reply := nftest.Serialize(
		&layers.Ethernet{SrcMAC: nftest.MAC("02:00:00:00:0a:03"), DstMAC: n3mac[:], EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: layers.ARPReply, SourceHwAddress: nftest.MAC("02:00:00:00:0a:03"), SourceProtAddress: net.ParseIP("198.18.1.3").To4(),
			DstHwAddress: n3mac[:], DstProtAddress: net.ParseIP("198.18.1.1").To4()})
	if res := r.Run("n3", reply); res.Port != -1 {
		t.Fatal("ARP reply forwarded")
	}
	r.ctl.HandlePunt(r.Handle(), r.Model, cube.Punt{InPort: 0, Reason: puntNeighIn, PktLen: len(reply), Frame: reply})
	if len(r.Transmitted) != 1 || !bytes.Equal(r.Transmitted[0].Data[0:6], nftest.MAC("02:00:00:00:0a:03")) {
		t.Fatalf("queued packet not sent to the learned MAC: %v", r.Transmitted)
	}
	// The fast path now knows it.
	if res := r.Run("n6", f); res.Port != 0 {
		t.Fatal("fast path did not learn the neighbour")
	}
}
