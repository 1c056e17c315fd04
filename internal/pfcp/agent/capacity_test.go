package agent_test

import (
	"net/netip"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/pfcp"
	"github.com/edgenf/edgenf/internal/pfcp/client"
)

// A cube holds the sessions its max_sessions sized its maps for: with
// 1,023 held (static ones), an SMF's 1,024th session is established and
// the next one is refused with No resources, nothing changed.
func TestUPFRefusesASessionPastMaxSessions(t *testing.T) {
	e := nftest.Engine(t)
	port := nftest.FreeUDPPort(t)
	c0 := upfCube(port, `,"max_sessions":1024`)
	for i := range uint32(1023) {
		s := &model.Session{SEID: uint64(1 + i),
			PDRs: []model.PDR{{ID: 1, Precedence: 100, Source: "access", FTEID: &model.FTEID{TEID: 0x2000 + i}, OuterHeaderRemoval: "gtp-u", FAR: 1}},
			FARs: []model.FAR{{ID: 1, Action: []string{"forw"}, Destination: "core"}}}
		c0.SetRow(upf.TableSessions, s.Key(), nftest.Entry(s))
	}
	nftest.MustUpdate(t, e, func(topo *cube.Topology) error {
		topo.Put(c0)
		return nil
	})
	c, err := client.Dial(netip.MustParseAddrPort("127.0.0.1:0"), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Associate(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Establish(0x100, uplinkOnly(0)...); err != nil {
		t.Fatalf("the 1,024th session: %v", err)
	}
	_, resp, err := c.Establish(0x101, uplinkOnly(0)...)
	if err == nil || client.CauseOf(resp) != pfcp.CauseNoResources {
		t.Fatalf("a 1,025th session: %v", err)
	}
	if n := len(sessions(t, e)); n != 1024 {
		t.Fatalf("%d sessions after the refusal", n)
	}
}
