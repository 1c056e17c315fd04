package upf

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/nftest"
)

// BenchmarkPerPacket measures the fast path's cost per packet with
// BPF_PROG_TEST_RUN (one packet per run: the kernel runs a repeated program
// on the same, already rewritten, frame) through the program an interface
// peered with the port runs (the cube's direct entry), next to a raw XDP redirect
// program measured interleaved in the same process: the ratio
// redirect/upf is what the bench's throughput ratio approaches, and it
// holds on a loaded machine where the nanoseconds do not.
//
//	go test ./internal/nf/upf -run '^$' -bench PerPacket
func BenchmarkPerPacket(b *testing.B) {
	sessions := []*model.Session{basicSession(1, 0x100, "198.19.0.5", "2001:db8:100:5::/64", 0x9000)}
	// the bench's shape: one URR, no QER
	sessions[0].QERs, sessions[0].PDRs[1].QERs = nil, nil
	for i := 2; i <= 100; i++ {
		sessions = append(sessions, basicSession(uint64(i), uint32(0x1000+i), fmt.Sprintf("198.19.1.%d", i), "", uint32(0x9000+i)))
	}
	// and one on a TEID the upf would choose (array slot, not hash)
	base, _ := (&model.Config{}).ChosenTEIDs()
	sessions = append(sessions, basicSession(101, base+3, "198.19.0.6", "", 0x9101))
	sessions[100].QERs, sessions[100].PDRs[1].QERs = nil, nil
	r := nftest.New(b, Type, testCube(datapath.XDP, sessions...))
	benchNeighbours(b, r)
	redirect := rawRedirect(b)
	ul := gtp(false, 0x100, 0, udpPkt("198.19.0.5", "198.51.100.7", 4000, 53, []byte("0123456789ab")))
	ulChosen := gtp(false, base+3, 0, udpPkt("198.19.0.6", "198.51.100.7", 4000, 53, []byte("0123456789ab")))
	dl := fromDN(udpPkt("198.51.100.7", "198.19.0.5", 53, 4000, []byte("0123456789ab")))
	for _, tc := range []struct {
		name  string
		port  uint32
		frame []byte
	}{{"uplink", 0, ul}, {"uplink-chosen", 0, ulChosen}, {"downlink", 1, dl}} {
		b.Run(tc.name, func(b *testing.B) {
			// what the interface peered with the port runs: the
			// cube's direct entry, starting the hop itself
			entry, err := r.DP.Entry(datapath.XDP, datapath.Hop{Kind: datapath.DstCube, Slot: r.Prog.Slot, Port: tc.port}, r.Prog)
			if err != nil {
				b.Fatal(err)
			}
			defer entry.Close()
			var upf, raw []float64
			for b.Loop() {
				upf = append(upf, runOnce(b, entry, tc.frame))
				raw = append(raw, runOnce(b, redirect, tc.frame))
			}
			mu, mr := median(upf), median(raw)
			b.ReportMetric(mu, "upf-ns/pkt")
			b.ReportMetric(mr, "redirect-ns/pkt")
			b.ReportMetric(mr/mu, "redirect/upf")
		})
	}
}

// benchNeighbours has the cube know the gNB and the data network's
// gateway, as the slow path would have resolved them.
func benchNeighbours(b *testing.B, r *nftest.Rig) {
	ctl := r.Ctl.(*controller)
	for _, n := range []struct {
		port      int
		addr, mac string
	}{{0, "198.18.1.2", gnbMAC}, {1, "198.18.2.2", dnMAC}} {
		var m [6]byte
		copy(m[:], nftest.MAC(n.mac))
		if err := ctl.putNeighbour(nkey{n.port, netip.MustParseAddr(n.addr)}, m); err != nil {
			b.Fatal(err)
		}
	}
}

func runOnce(b *testing.B, p *ebpf.Program, frame []byte) float64 {
	v, d, err := p.Benchmark(frame, 1, nil) //nolint:staticcheck // the kernel's own timing of one run
	if err != nil || v != datapath.XDPRedirect {
		b.Fatalf("verdict %d, %v", v, err)
	}
	return float64(d.Nanoseconds())
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// rawRedirect is the baseline: an XDP program that only redirects.
func rawRedirect(b *testing.B) *ebpf.Program {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
		asm.Mov.Imm(asm.R1, nftest.FakeIfindex),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRedirect.Call(),
		asm.Return(),
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}
