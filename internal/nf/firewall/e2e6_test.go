package firewall

import (
	"context"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// TestE2EIPv6RulesAndFragments: dual-stack hosts across the firewall. IPv6
// ping, TCP and UDP pass or are blocked as the rules say (neighbour
// discovery works under a drop policy, with no static neighbours); large
// UDP datagrams, fragmented by the sender's kernel, meeting a deny rule leak
// not a single fragment in either family; IPv4 keeps working beside.
func TestE2EIPv6RulesAndFragments(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			_, a, b := fwLab(t, hook, `{"ingress_policy":"drop","egress_policy":"drop","accept_established":true}`,
				[]string{`{"id":10,"proto":"icmpv6","icmp_type":"echo-request","action":"accept"}`},
				[]string{
					`{"id":10,"proto":"udp","dport":"7000","action":"drop"}`,
					`{"id":20,"proto":"udp","action":"accept"}`,
					`{"id":30,"dst":"2001:db8:1::3","proto":"tcp","dport":"22","action":"accept"}`,
					`{"id":40,"family":"ipv6","proto":"icmpv6","icmp_type":"echo-request","action":"accept"}`,
					`{"id":50,"family":"ipv4","proto":"tcp","dport":"2222","action":"accept"}`,
				})
			for _, h := range []struct {
				h    *netlab.Host
				addr string
			}{{a, "2001:db8:1::2/64"}, {b, "2001:db8:1::3/64"}} {
				if err := h.h.AddAddr("eth0", h.addr); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			// Neighbour discovery first (no static neighbours): at TC
			// the very first echo request, queued while the kernel
			// resolves, is sometimes lost; resolution itself must work.
			for i := 0; i < 3 && a.Ping(ctx, "2001:db8:1::3", 1) != nil; i++ {
			}
			if err := a.Ping(ctx, "2001:db8:1::3", 2); err != nil {
				t.Fatalf("ping6 a->b (egress rule 40, reply established): %v", err)
			}
			if err := b.Ping(ctx, "2001:db8:1::2", 2); err != nil {
				t.Fatalf("ping6 b->a (ingress rule 10): %v", err)
			}
			if err := tcpConnect(t, a, b, "2001:db8:1::3", 22); err != nil {
				t.Fatalf("tcp6 a->b:22 (rule 30): %v", err)
			}
			if err := tcpConnect(t, a, b, "2001:db8:1::3", 2222); err == nil {
				t.Fatal("tcp6 a->b:2222 connected; rule 50 is IPv4's, the policy drops it")
			}
			if err := tcpConnect(t, a, b, "198.18.1.3", 2222); err != nil {
				t.Fatalf("tcp a->b:2222 (rule 50): %v", err)
			}
			if err := tcpConnect(t, b, a, "2001:db8:1::2", 22); err == nil {
				t.Fatal("tcp6 b->a:22 connected; the ingress policy drops it")
			}
			if sent, got, err := netlab.UDPFlow(ctx, a, b, "2001:db8:1::3", 6000, 100, 64, 5000); err != nil || got != sent {
				t.Fatalf("udp6 a->b:6000: %d/%d, %v", got, sent, err)
			}
			const n, size = 20, 3000 // three fragments each on a 1500-byte MTU
			for _, fam := range []struct {
				dst   string
				stats func() (map[string]uint64, error)
			}{{"2001:db8:1::3", b.IP6Stats}, {"198.18.1.3", b.IPStats}} {
				before, err := fam.stats()
				if err != nil {
					t.Fatal(err)
				}
				if _, got, err := netlab.UDPFlow(ctx, a, b, fam.dst, 7000, n, size, 200); err != nil || got != 0 {
					t.Errorf("%s: %d datagrams to the denied port arrived (%v)", fam.dst, got, err)
				}
				after, _ := fam.stats()
				if d := after["ReasmReqds"] - before["ReasmReqds"]; d != 0 {
					t.Errorf("%s: %d fragments of denied datagrams reached b", fam.dst, d)
				}
				sent, got, err := netlab.UDPFlow(ctx, a, b, fam.dst, 7001, n, size, 200)
				if err != nil || got != sent {
					t.Errorf("%s: %d of %d allowed fragmented datagrams arrived (%v)", fam.dst, got, sent, err)
				}
				final, _ := fam.stats()
				if d := final["ReasmOKs"] - after["ReasmOKs"]; d != uint64(got) || got == 0 {
					t.Errorf("%s: b reassembled %d datagrams, received %d", fam.dst, d, got)
				}
			}
		})
	}
}
