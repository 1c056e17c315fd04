package upf

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/cilium/ebpf/perf"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/google/gopacket/layers"
)

const liMAC = "02:00:00:00:0c:01"

// transmitted reads the copies the program sent through the daemon (punt
// reason PuntTransmit): port and frame.
func transmitted(t *testing.T, rd *perf.Reader) []Frame {
	t.Helper()
	var out []Frame
	for {
		rd.SetDeadline(time.Now().Add(100 * time.Millisecond))
		rec, err := rd.Read()
		if err != nil {
			return out
		}
		var hdr datapath.PuntHeader
		if binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &hdr) != nil || hdr.Magic != datapath.PuntMagic ||
			hdr.Reason != datapath.PuntTransmit {
			continue
		}
		f := rec.RawSample[binary.Size(hdr):]
		out = append(out, Frame{Port: int(hdr.Arg), Data: append([]byte(nil), f[:min(len(f), int(hdr.PktLen))]...)})
	}
}

// Frame is a frame out of a port.
type Frame struct {
	Port int
	Data []byte
}

// DUPL: each packet a FAR forwards is copied, with the duplicate's own
// outer header, to a lawful-interception mediation function; the packet
// itself goes on unchanged. At XDP in a test run the copy goes through the
// daemon (no copy machine behind the test's interface), where its bytes are
// checked; at TC the kernel clones it.
func TestDuplicationForLawfulInterception(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			s := basicSession(1, 0x100, "198.19.0.5", "2001:db8:100:5::/64", 0x9000)
			for i, teid := range []uint32{0x7001, 0x7002} {
				s.FARs[i].Action = []string{"forw", "dupl"}
				s.FARs[i].Duplicate = &model.Duplicate{Destination: "li-function",
					OuterHeader: &model.OuterHeader{TEID: teid, Address: "198.18.1.9"}}
			}
			r := newRig(t, hook, s)
			r.neighbour(0, "198.18.1.9", liMAC)
			rd, err := perf.NewReader(r.DP.PuntMap(), 1<<16)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			transmitted(t, rd)

			dl := udpPkt("198.51.100.7", "198.19.0.5", 53, 4000, []byte("downlink, intercepted"))
			ul := udpPkt("2001:db8:100:5::1", "2001:db8:ff::7", 4000, 53, []byte("uplink, intercepted"))
			for _, tc := range []struct {
				name, in string
				frame    []byte
				pkt      []byte
				liTEID   uint32
				out      int
			}{
				{"downlink", "n6", fromDN(dl), dl, 0x7002, 0},
				{"uplink (an IPv6 UE)", "n3", gtp(false, 0x100, 9, ul), ul, 0x7001, 1},
			} {
				before := r.stat("duplicated") + r.stat("duplicated_slow")
				res := r.Run(tc.in, tc.frame)
				// (the rig names the first port that sent something: the
				// copy's n3 for the uplink too; the frame tells where the
				// packet went)
				if res.Port < 0 || (tc.out == 0 && res.Port != 0) {
					t.Fatalf("%s: verdict %d port %d, want out of port %d; counters %v", tc.name, res.Verdict, res.Port, tc.out, r.nonZero())
				}
				// The packet itself as without duplication.
				if tc.out == 0 {
					g := parseGTP(t, res.Data)
					if g.teid != 0x9000 || g.qfi != 9 || g.dst.String() != "198.18.1.2" || !bytes.Equal(g.inner, tc.pkt) {
						t.Fatalf("%s: forwarded to %s TEID %#x QFI %d", tc.name, g.dst, g.teid, g.qfi)
					}
				} else if eth := decode(res.Data).Layer(layers.LayerTypeEthernet).(*layers.Ethernet); !bytes.Equal(res.Data[14:], tc.pkt) ||
					eth.DstMAC.String() != dnMAC {
					t.Fatalf("%s: forwarded packet changed, or to %s", tc.name, eth.DstMAC)
				}
				if got := r.stat("duplicated") + r.stat("duplicated_slow"); got != before+1 {
					t.Fatalf("%s: %d copies, want 1; counters %v", tc.name, got-before, r.nonZero())
				}
				copies := transmitted(t, rd)
				if hook == datapath.TC {
					if len(copies) != 0 || r.stat("duplicated") == 0 {
						t.Fatalf("%s: at TC the kernel clones the copy; %d through the daemon", tc.name, len(copies))
					}
					continue
				}
				if len(copies) != 1 || copies[0].Port != 0 {
					t.Fatalf("%s: %d copies through the daemon, want 1 out of n3", tc.name, len(copies))
				}
				g := parseGTP(t, copies[0].Data)
				if g.teid != tc.liTEID || g.qfi != 0 || g.dst.String() != "198.18.1.9" || !bytes.Equal(g.inner, tc.pkt) {
					t.Fatalf("%s: copy to %s TEID %#x QFI %d, want 198.18.1.9 %#x 0 with the packet", tc.name, g.dst, g.teid, g.qfi, tc.liTEID)
				}
				if eth := decode(copies[0].Data).Layer(layers.LayerTypeEthernet).(*layers.Ethernet); eth.DstMAC.String() != liMAC {
					t.Fatalf("%s: copy to MAC %s, want the mediation function's", tc.name, eth.DstMAC)
				}
			}
			// URRs count the packet once, not its copy.
			if u := r.ctl.Usage(1, nil, 0); len(u) != 1 || u[0].Volume.DLPkts != 1 || u[0].Volume.ULPkts != 1 {
				t.Fatalf("usage %+v", u[0].Volume)
			}
			// Without dupl the copies stop.
			for i := range s.FARs {
				s.FARs[i].Action, s.FARs[i].Duplicate = []string{"forw"}, nil
			}
			if err := r.Update(testCube(hook, s)); err != nil {
				t.Fatal(err)
			}
			before := r.stat("duplicated") + r.stat("duplicated_slow")
			if res := r.Run("n6", fromDN(dl)); res.Port != 0 {
				t.Fatalf("downlink after the change: port %d", res.Port)
			}
			if r.stat("duplicated")+r.stat("duplicated_slow") != before || len(transmitted(t, rd)) != 0 {
				t.Fatal("a copy after dupl was removed")
			}
		})
	}
}

// Bad duplicates are refused with the field at fault.
func TestDuplicateValidation(t *testing.T) {
	c := testCube(datapath.XDP)
	for _, tc := range []struct {
		name string
		far  model.FAR
		want string
	}{
		{"dupl without a destination", model.FAR{ID: 1, Action: []string{"forw", "dupl"}, Destination: "core"}, "duplicate"},
		{"dupl without forw", model.FAR{ID: 1, Action: []string{"drop", "dupl"},
			Duplicate: &model.Duplicate{Destination: "li-function", OuterHeader: &model.OuterHeader{TEID: 1, Address: "198.18.1.9"}}}, "apply_action"},
		{"a duplicate without dupl", model.FAR{ID: 1, Action: []string{"forw"}, Destination: "core",
			Duplicate: &model.Duplicate{Destination: "li-function", OuterHeader: &model.OuterHeader{TEID: 1, Address: "198.18.1.9"}}}, "duplicate"},
		{"a GTP-U copy without a tunnel", model.FAR{ID: 1, Action: []string{"forw", "dupl"}, Destination: "core",
			Duplicate: &model.Duplicate{Destination: "li-function", Port: "n3"}}, "duplicate.outer_header_creation"},
		{"a tunnel out of n6", model.FAR{ID: 1, Action: []string{"forw", "dupl"}, Destination: "core",
			Duplicate: &model.Duplicate{Destination: "core", Port: "n6", OuterHeader: &model.OuterHeader{TEID: 1, Address: "198.18.1.9"}}}, "duplicate.outer_header_creation"},
		{"a port the cube lacks", model.FAR{ID: 1, Action: []string{"forw", "dupl"}, Destination: "core",
			Duplicate: &model.Duplicate{Destination: "core", OuterHeader: &model.OuterHeader{TEID: 1, Address: "198.18.1.9"}}}, "duplicate.port"},
		{"the LI function as a destination", model.FAR{ID: 1, Action: []string{"forw"}, Destination: "li-function"}, "destination"},
	} {
		s := &model.Session{SEID: 1, PDRs: []model.PDR{{ID: 1, Precedence: 1, Source: "core", UEIPv4: "198.19.0.5", FAR: 1}},
			FARs: []model.FAR{tc.far}}
		err := s.Validate(c)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Fatalf("%s: %v, want an error about %s", tc.name, err, tc.want)
		}
	}
}
