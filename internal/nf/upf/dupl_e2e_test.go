package upf

import (
	"net/netip"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/pfcp"
	"github.com/edgenf/edgenf/internal/pfcp/client"
	"github.com/edgenf/edgenf/internal/testenv"
)

// DUPL with real traffic: every downlink datagram reaches the UE through
// its tunnel, and a copy goes down the mediation function's tunnel (here a
// TEID the simulated gNB also terminates), without a QFI. At XDP the copies
// are made by the copy machine behind n6 (the frame leaves through the skb
// path); at TC the kernel clones them.
func TestE2EDuplicationToAMediationFunction(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			ed := newEdge(t, hook)
			const liTEID = 0x7777
			gnb := netip.MustParseAddr("198.18.1.2")
			far := client.FAR{ID: 2, Action: pfcp.ActionFORW | pfcp.ActionDUPL, Dest: pfcp.InterfaceAccess, TunnelTEID: 0x9001,
				Tunnel: gnb, Dup: &client.Dup{Dest: pfcp.InterfaceLI, TunnelTEID: liTEID, Tunnel: gnb}}
			u := ed.attach(sessionSpec{farDL: &far})
			ed.gnb.AddTunnel(u.UE, liTEID)
			s := newSink(t, u.Host, 5007)
			const n = 50
			rawUDP(t, ed.dn, netip.AddrPortFrom(u.v4, 5007), n, 100, 1000)
			s.wait(2 * n)
			dp, _, dq := ed.gnb.Tunnel(u.dlTEID)
			lp, lb, lq := ed.gnb.Tunnel(liTEID)
			if dp != n || lp != n || lb != n*128 || dq != 9 || lq != 0 {
				t.Fatalf("%d packets down the UE's tunnel (QFI %d), %d (%d octets, QFI %d) down the mediation function's; want %d each, QFI 9 and none; counters %v",
					dp, dq, lp, lb, lq, n, ed.counters())
			}
			if hook == datapath.XDP {
				for _, c := range ed.counters() {
					if c.Name == "duplicated_slow" || c.Name == "duplicates_lost" {
						t.Fatalf("%s: %d copies not made by the copy machine", c.Name, c.Value)
					}
				}
			}
		})
	}
}
