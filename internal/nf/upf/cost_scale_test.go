package upf

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/nftest"
)

// BenchmarkPerPacketScale measures the fast path per packet with many
// sessions whose TEIDs and UE addresses are random (the bench's upf-scale
// groups), each run a packet of the next session: what the tables' size
// costs in cache and TLB misses, next to one session measured interleaved
// in the same process, and to a second run of the same packet (its
// session's entries then in cache: the difference is the misses).
// Every other session's uplink TEID is one the upf would choose (found by
// array slot, not hash; the slots in random order): "uplink" runs the
// others', "uplink-chosen" those.
// UPF_BENCH_SESSIONS sets how many sessions (100,000 by default);
// UPF_BENCH_POOL=1 puts the UE addresses in a UE pool (10.44.0.0/15, up to
// 131,072 sessions): the downlink finds them through the pool's array.
//
//	go test ./internal/nf/upf -run '^$' -bench PerPacketScale
func BenchmarkPerPacketScale(b *testing.B) {
	n := 100000
	if s := os.Getenv("UPF_BENCH_SESSIONS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	rng := rand.New(rand.NewPCG(14, 29244))
	teids, ues := map[uint32]bool{}, map[uint32]bool{}
	c := testCube(datapath.XDP)
	c.Config = []byte(`{"teid_range":"0x1000-0xfffffff"}`)
	base, _ := (&model.Config{TEIDRange: "0x1000-0xfffffff"}).ChosenTEIDs()
	slots := rng.Perm(n)
	ueBase, ueBits := uint32(10<<24), uint32(24)
	if os.Getenv("UPF_BENCH_POOL") == "1" {
		c.Config = []byte(`{"teid_range":"0x1000-0xfffffff","ue_pools":[{"prefix":"10.44.0.0/15"}]}`)
		ueBase, ueBits = 10<<24|44<<16, 17
	}
	type flow struct{ ul, dl []byte }
	var flows []flow
	for len(flows) < n {
		t := 0x1000 + rng.Uint32N(0x7ff_0000) // the SMF's: below the chosen half
		u := ueBase | rng.Uint32N(1<<ueBits)
		if teids[t] || ues[u] || u&0xff == 0 || u&0xff == 0xff {
			continue
		}
		teids[t], ues[u] = true, true
		if len(flows)%2 == 1 {
			t = base + uint32(slots[len(flows)])
		}
		ue := net.IP(binary.BigEndian.AppendUint32(nil, u)).String()
		s := &model.Session{SEID: uint64(len(flows) + 1),
			PDRs: []model.PDR{
				{ID: 1, Precedence: 100, Source: "access", FTEID: &model.FTEID{TEID: t}, OuterHeaderRemoval: "gtp-u", FAR: 1, URRs: []uint32{1}},
				{ID: 2, Precedence: 100, Source: "core", UEIPv4: ue, FAR: 2, URRs: []uint32{1}},
			},
			FARs: []model.FAR{
				{ID: 1, Action: []string{"forw"}, Destination: "core"},
				{ID: 2, Action: []string{"forw"}, Destination: "access",
					OuterHeader: &model.OuterHeader{TEID: 0x80000000 | uint32(len(flows)), Address: "198.18.1.2"}},
			},
			URRs: []model.URR{{ID: 1, Measure: []string{"volume"}}},
		}
		c.SetRow(TableSessions, s.Key(), nftest.Entry(s))
		flows = append(flows, flow{
			ul: gtp(false, t, 0, udpPkt(ue, "198.51.100.7", 4000, 53, []byte("0123456789ab"))),
			dl: fromDN(udpPkt("198.51.100.7", ue, 53, 4000, []byte("0123456789ab"))),
		})
	}
	r := nftest.New(b, Type, c)
	benchNeighbours(b, r)
	for _, dir := range []struct {
		name   string
		port   uint32
		dl     bool
		chosen int // uplink: 0 the sessions with the SMF's TEIDs, 1 the chosen ones
	}{{"uplink", 0, false, 0}, {"uplink-chosen", 0, false, 1}, {"downlink", 1, true, 0}} {
		b.Run(fmt.Sprintf("%s-%d", dir.name, n), func(b *testing.B) {
			if err := r.DP.SetMetadata(datapath.Metadata{Cube: r.Prog.Slot, InPort: dir.port, IngressIfindex: 1}); err != nil {
				b.Fatal(err)
			}
			frame := func(i int) []byte {
				if dir.dl {
					return flows[i].dl
				}
				return flows[i].ul
			}
			var one, many, again []float64
			i := 0
			for b.Loop() {
				one = append(one, runOnce(b, r.Prog.EBPF(), frame(dir.chosen)))
				i = (i + 7919) % n // a stride prime to n: every session, in no cache-friendly order
				if !dir.dl && i%2 != dir.chosen {
					i = (i + 7919) % n
				}
				many = append(many, runOnce(b, r.Prog.EBPF(), frame(i)))
				again = append(again, runOnce(b, r.Prog.EBPF(), frame(i)))
			}
			m1, mn := median(one), median(many)
			b.ReportMetric(m1, "1-session-ns/pkt")
			b.ReportMetric(mn, "n-sessions-ns/pkt")
			b.ReportMetric(m1/mn, "n/1")
			b.ReportMetric(median(again), "same-again-ns/pkt")
		})
	}
}
