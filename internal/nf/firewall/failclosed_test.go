package firewall

import (
	"bytes"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// tcpWithPayload is a TCP segment from src:sport to dst:dport with n bytes
// of payload.
func tcpWithPayload(src, dst string, sport, dport uint16, flags string, n int) []byte {
	t := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Window: 1024, SYN: flags == "S", ACK: flags == "A"}
	return nftest.Serialize(eth(), ip(src, dst, layers.IPProtocolTCP), t, gopacket.Payload(bytes.Repeat([]byte{'t'}, n)))
}

func udpWithPayload(src, dst string, sport, dport uint16, n int) []byte {
	return nftest.UDP4(src, dst, sport, dport, bytes.Repeat([]byte{'u'}, n))
}

// pad makes frame at least 60 bytes long, as Ethernet does: the padding is
// not part of the IPv4 datagram.
func pad(frame []byte) []byte {
	if len(frame) >= 60 {
		return frame
	}
	return append(frame, make([]byte, 60-len(frame))...)
}

func mangle(frame []byte, fn func(ip []byte)) []byte {
	f := append([]byte(nil), frame...)
	fn(f[14:])
	nftest.FixIPv4Checksum(f)
	return f
}

// TestUnparsableFramesMeetThePolicy: frames the firewall cannot parse are
// judged by the chain's default policy instead of passing unjudged; with an
// accept rule that would match what they pretend to be, a drop policy still
// drops them. Counted on row -2.
func TestUnparsableFramesMeetThePolicy(t *testing.T) {
	good := udp("198.18.0.1", "198.19.0.1", 1000, 53)
	cases := []struct {
		name  string
		frame []byte
	}{
		{"IHL 4", mangle(good, func(ip []byte) { ip[0] = 0x44 })},
		{"IHL 0", mangle(good, func(ip []byte) { ip[0] = 0x40 })},
		{"version 6 in an IPv4 frame", mangle(good, func(ip []byte) { ip[0] = 0x65 })},
		{"total length past the frame", mangle(good, func(ip []byte) { ip[2], ip[3] = 0x05, 0xdc })},
		{"total length below the header", mangle(good, func(ip []byte) { ip[2], ip[3] = 0, 19 })},
		{"three VLAN tags", nftest.VLANTagged(good, 3)},
		{"UDP header cut by the total length", pad(mangle(good, func(ip []byte) { ip[2], ip[3] = 0, 24 }))},
		{"TCP data offset 4", mangle(tcp("198.18.0.1", "198.19.0.1", 1000, 53, "S"), func(ip []byte) { ip[20+12] = 0x40 })},
	}
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		for _, policy := range []string{"drop", "accept"} {
			t.Run(string(hook)+"/"+policy, func(t *testing.T) {
				v := hookVerdicts[hook]
				r := nftest.New(t, Type, fwModel(hook, &Config{IngressPolicy: policy}, []Rule{
					{ID: 10, Proto: "udp", Dport: "53", Action: "accept"},
					{ID: 20, Proto: "tcp", Dport: "53", Action: "accept"},
				}, nil))
				cases := cases
				if hook == datapath.XDP {
					// (BPF_PROG_TEST_RUN refuses such a frame for TC)
					cases = append(cases, struct {
						name  string
						frame []byte
					}{"truncated IPv4 header", good[:14+16]})
				}
				var bytes uint64
				for _, c := range cases {
					res := r.RunTransparent(in, c.frame)
					want := v.drop
					if policy == "accept" {
						want = v.pass
					}
					if res.Verdict != want {
						t.Errorf("%s: verdict %d, want the policy's (%s)", c.name, res.Verdict, policy)
					}
					bytes += uint64(len(c.frame))
				}
				// a well-formed one still matches its rule
				runSteps(t, r, v, []step{{in, good, true}})
				cs := counts(t, r)
				if n := cs["ingress/-2"]; n.Packets != uint64(len(cases)) || n.Bytes != bytes || n.Action != policy {
					t.Errorf("row -2: %+v, want %d packets, %d bytes, action %s", n, len(cases), bytes, policy)
				}
				if cs["ingress/10"].Packets != 1 || cs["ingress/20"].Packets != 0 {
					t.Errorf("rules matched malformed frames: %v", cs)
				}
			})
		}
	}
}

// TestFragmentsCannotBypassRules: tiny first fragments (TCP, UDP header
// cut) and TCP fragments at offset 8 are dropped whatever the rules; later
// fragments get the verdict of their datagram's first fragment; those of a
// datagram whose first fragment was never seen meet the policy.
func TestFragmentsCannotBypassRules(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			v := hookVerdicts[hook]
			r := nftest.New(t, Type, fwModel(hook, &Config{IngressPolicy: "accept"}, []Rule{
				{ID: 10, Proto: "tcp", Dport: "22", Action: "drop"},
				{ID: 20, Proto: "udp", Dport: "7000", Action: "drop"},
			}, nil))
			// A tiny first fragment: 8 bytes of TCP header (ports, no
			// flags), padded to 60 bytes on the wire; the rest of the
			// header comes in the next fragment. Per rule 10's dport it
			// would be dropped, but the rule never sees a port 22 that
			// is not there: dropped as a tiny fragment, as is the rest.
			ssh := tcpWithPayload("198.18.0.1", "198.19.0.1", 40000, 22, "S", 40)
			frags := nftest.Fragments4(ssh, 101, 8)
			tiny := pad(frags[0])
			// The same with the header cut after 16 bytes.
			frags16 := nftest.Fragments4(tcpWithPayload("198.18.0.1", "198.19.0.1", 40001, 80, "S", 40), 102, 16)
			// An innocent first fragment to port 80 (whole header), then
			// a fragment at offset 8 that would rewrite its flags.
			web := nftest.Fragments4(tcpWithPayload("198.18.0.1", "198.19.0.1", 40002, 80, "S", 40), 103, 24)
			overlap := nftest.Fragments4(tcpWithPayload("198.18.0.1", "198.19.0.1", 40002, 80, "S", 40), 103, 8)[1]
			// UDP: a tiny first fragment (4 bytes of header: no
			// destination port), more to come.
			udpTiny := mangle(udpWithPayload("198.18.0.1", "198.19.0.1", 5000, 7001, 100)[:14+24], func(ip []byte) {
				ip[2], ip[3] = 0, 24
				ip[4], ip[5] = 0, 104
				ip[6] = 0x20
			})
			// Large UDP datagrams: to 7000 (rule 20 drops), to 7001 (the
			// policy accepts).
			deny := nftest.Fragments4(udpWithPayload("198.18.0.1", "198.19.0.1", 5000, 7000, 3000), 105, 1480)
			allow := nftest.Fragments4(udpWithPayload("198.18.0.1", "198.19.0.1", 5000, 7001, 3000), 106, 1480)
			// Later fragments of a datagram whose first fragment never came.
			orphan := nftest.Fragments4(udpWithPayload("198.18.0.1", "198.19.0.1", 5000, 7000, 3000), 107, 1480)[1:]
			steps := []step{
				{in, tiny, false},
				{in, frags[1], false}, // at offset 8 (and its datagram was refused)
				{in, frags[2], false}, // its datagram was refused
				{in, frags16[0], false},
				{in, web[0], true},
				{in, overlap, false},
				{in, web[1], false}, // its datagram was tampered with
				{in, udpTiny, false},
				{in, deny[0], false}, {in, deny[1], false}, {in, deny[2], false},
				{in, allow[0], true}, {in, allow[1], true}, {in, allow[2], true},
				{in, orphan[0], true}, {in, orphan[1], true}, // the policy: accept
			}
			runSteps(t, r, v, steps)
			cs := counts(t, r)
			if n := cs["ingress/-3"]; n.Packets != 7 || n.Action != "drop" {
				t.Errorf("row -3 (bad fragments): %+v, want 7 packets dropped", n)
			}
			if n := cs["ingress/20"].Packets; n != 3 {
				t.Errorf("rule 20 counted %d packets, want the datagram's 3 fragments", n)
			}
			if n := cs["ingress/-2"].Packets; n != 2 {
				t.Errorf("row -2 counted %d packets, want the 2 orphans", n)
			}
			// With a drop policy the orphans are dropped too.
			r2 := nftest.New(t, Type, fwModel(hook, &Config{IngressPolicy: "drop"}, []Rule{
				{ID: 10, Proto: "udp", Dport: "7001", Action: "accept"},
			}, nil))
			runSteps(t, r2, v, []step{
				{in, orphan[0], false}, {in, orphan[1], false},
				{in, allow[0], true}, {in, allow[1], true}, {in, allow[2], true},
			})
			if n := counts(t, r2)["ingress/10"].Packets; n != 3 {
				t.Errorf("rule 10 counted %d packets, want 3", n)
			}
		})
	}
}
