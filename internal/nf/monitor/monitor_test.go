package monitor

import (
	"bytes"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

func TestMonitorCountsExactlyAndPassesUnchanged(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			r := nftest.New(t, Type, &cube.Cube{Name: "m", Hook: hook})
			frames := []struct {
				dir   datapath.Direction
				frame []byte
			}{
				{datapath.Ingress, nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, []byte("abc"))},
				{datapath.Ingress, nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, []byte("abcdef"))},
				{datapath.Ingress, nftest.TCP4("198.18.0.1", "198.18.0.2", 1, 2)},
				{datapath.Egress, nftest.ICMP4Echo("198.18.0.2", "198.18.0.1", 7, 1)},
				{datapath.Egress, nftest.UDP6("2001:db8::1", "2001:db8::2", 5, 6, nil)},
				{datapath.Ingress, nftest.ARPRequest("02:00:00:00:00:01", "198.18.0.1", "198.18.0.2")},
			}
			redirect := uint32(datapath.XDPRedirect)
			if hook == datapath.TC {
				redirect = datapath.TCActRedirect
			}
			for _, f := range frames {
				res := r.RunTransparent(f.dir, f.frame)
				if res.Verdict != redirect || !bytes.Equal(res.Data, f.frame) {
					t.Fatalf("verdict %d (want %d), frame changed %v", res.Verdict, redirect, !bytes.Equal(res.Data, f.frame))
				}
			}
			got, err := Counts(r.Handle())
			if err != nil {
				t.Fatal(err)
			}
			want := []Count{
				{"ingress", "arp", 1, uint64(len(frames[5].frame))},
				{"ingress", "ipv4-tcp", 1, uint64(len(frames[2].frame))},
				{"ingress", "ipv4-udp", 2, uint64(len(frames[0].frame) + len(frames[1].frame))},
				{"egress", "icmp", 1, uint64(len(frames[3].frame))},
				{"egress", "ipv6-udp", 1, uint64(len(frames[4].frame))},
			}
			if len(got) != len(want) {
				t.Fatalf("counts %+v, want %+v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
				}
			}
			st := r.Stats()
			if st[0].RxPackets != 4 || st[1].RxPackets != 2 {
				t.Errorf("framework counters: ingress %d egress %d", st[0].RxPackets, st[1].RxPackets)
			}
			if _, err := reset(r.Handle(), nil, nil); err != nil {
				t.Fatal(err)
			}
			if got, _ := Counts(r.Handle()); len(got) != 0 {
				t.Errorf("after reset: %+v", got)
			}
		})
	}
}
