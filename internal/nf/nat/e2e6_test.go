package nat

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/testenv"
)

// TestE2ENPTv6: the inside site 2001:db8:1::/48 behind the Linux router
// reaches the server as 2001:db8:99::/48 — the server sees the mapped
// address with the inside host's interface identifier and port, UDP and TCP
// replies find their way back, ping6 works — while IPv4 masquerade-style
// SNAT runs on the same NAT cube.
func TestE2ENPTv6(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			l := newNATLab(t, hook)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(l.a1.AddAddr("eth0", "2001:db8:1:1::2/64"))
			must(l.r.AddAddr("in1", "2001:db8:1:1::1/64"))
			must(l.r.AddAddr("wan", "2001:db8:ff::fe/64"))
			must(l.s.AddAddr("eth0", "2001:db8:ff::1/64"))
			must(l.a1.AddRoute("::/0", "2001:db8:1:1::1"))
			must(l.s.AddRoute("2001:db8:99::/48", "2001:db8:ff::fe"))
			must(l.r.Sysctl("net.ipv6.conf.all.forwarding", "1"))
			l.addNAT(t, hook, "pf:p1", "", map[string][]string{
				"npt":  {`{"id":1,"internal":"2001:db8:1::/48","external":"2001:db8:99::/48"}`},
				"snat": {`{"id":1,"internal":"198.18.0.0/16","external":"198.19.0.254"}`},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			udpEcho(t, l.s, 7007)
			tcpWhoAmI(t, l.s, 7008)
			// 2001:db8:1:1::2 maps to 2001:db8:99:1:: plus the subnet
			// word's adjustment; the interface identifier stays.
			got, err := udpAsk(ctx, l.a1, 41000, "[2001:db8:ff::1]:7007", "hi")
			must(err)
			seen := strings.TrimPrefix(got, "hi|")
			if !strings.HasPrefix(seen, "[2001:db8:99:") || !strings.HasSuffix(seen, "::2]:41000") {
				t.Fatalf("the server saw %q, want 2001:db8:99:…::2 port 41000", seen)
			}
			who, err := tcpAsk(ctx, l.a1, 41001, "[2001:db8:ff::1]:7008")
			must(err)
			if !strings.HasPrefix(who, "[2001:db8:99:") || !strings.HasSuffix(who, "::2]:41001") {
				t.Fatalf("TCP: the server saw %q", who)
			}
			if err := l.a1.Ping(ctx, "2001:db8:ff::1", 2); err != nil {
				t.Fatalf("ping6 through NPTv6: %v", err)
			}
			// IPv4 SNAT on the same cube.
			got, err = udpAsk(ctx, l.a1, 41002, "198.19.0.1:7007", "v4")
			must(err)
			if !strings.HasPrefix(got, "v4|198.19.0.254:") {
				t.Fatalf("IPv4: the server saw %q", got)
			}
		})
	}
}
