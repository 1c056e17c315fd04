package agent_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/pfcp"
	"github.com/edgenf/edgenf/internal/pfcp/client"
)

// uplinkOnly is a session of one uplink PDR on the tunnel given (or one the
// UPF chooses: teid 0).
func uplinkOnly(teid uint32) []*pfcp.IE {
	p := client.PDR{ID: 1, Precedence: 200, Access: true, ChooseTEID: teid == 0, FAR: 1}
	if teid != 0 {
		p.TEID, p.TEIDAddr = teid, netip.MustParseAddr("198.18.1.1")
	}
	return []*pfcp.IE{p.IE(), client.FAR{ID: 1, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceCore}.IE()}
}

// The UPF chooses TEIDs from the upper half of its range, one per slot of
// its array (here 4: range 0x1000-0x1007, chosen 0x1004-0x1007): the
// Created PDR names the TEID, a full array is refused with No resources
// and nothing changed, a deleted session's slot is taken again, and an
// SMF's TEID in the chosen range is refused unless its session already has
// it.
func TestUPFChosenTEIDs(t *testing.T) {
	e := nftest.Engine(t)
	port := nftest.FreeUDPPort(t)
	c0 := upfCube(port, "")
	c0.Config = bytes.Replace(c0.Config, []byte(`"0x1000-0x1fffff"`), []byte(`"0x1000-0x1007"`), 1)
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
	var ss []*client.Session
	seen := map[uint32]bool{}
	for i := range 4 {
		s, _, err := c.Establish(uint64(0x100+i), uplinkOnly(0)...)
		if err != nil {
			t.Fatal(err)
		}
		f, ok := s.TEIDOf(1)
		if !ok || f.TEID < 0x1004 || f.TEID > 0x1007 || seen[f.TEID] || f.IPv4.String() != "198.18.1.1" {
			t.Fatalf("establishment %d: Created PDR F-TEID %+v (%v), chosen before %v", i, f, ok, seen)
		}
		seen[f.TEID] = true
		ss = append(ss, s)
	}
	_, resp, err := c.Establish(0x200, uplinkOnly(0)...)
	if err == nil || client.CauseOf(resp) != pfcp.CauseNoResources || resp.IEs.Find(pfcp.IEOffendingIE) == nil {
		t.Fatalf("a fifth chosen TEID: %v", err)
	}
	if n := len(sessions(t, e)); n != 4 {
		t.Fatalf("%d sessions after the refusal", n)
	}

	// An SMF's TEID in the chosen range: refused, naming the F-TEID and
	// the PDR; one below it is the SMF's to give.
	_, resp, err = c.Establish(0x201, uplinkOnly(0x1005)...)
	if err == nil || client.CauseOf(resp) != pfcp.CauseRuleFailure || resp.IEs.Find(pfcp.IEFailedRuleID) == nil {
		t.Fatalf("an SMF's TEID in the chosen range: %v", err)
	}
	if oi := resp.IEs.Find(pfcp.IEOffendingIE); oi == nil || !bytes.Equal(oi.Value, []byte{0, byte(pfcp.IEFTEID)}) {
		t.Fatalf("offending IE %v", oi)
	}
	if _, _, err := c.Establish(0x202, uplinkOnly(0x1003)...); err != nil {
		t.Fatalf("an SMF's TEID below the chosen range: %v", err)
	}
	// The SMF may give a session's chosen TEID back (an Update PDR).
	f0, _ := ss[0].TEIDOf(1)
	up := client.PDR{ID: 1, Precedence: 100, Access: true, TEID: f0.TEID, TEIDAddr: netip.MustParseAddr("198.18.1.1"), FAR: 1}
	if _, err := c.Modify(ss[0], up.UpdateIE()); err != nil {
		t.Fatalf("the session's own chosen TEID given back: %v", err)
	}

	// Deleted, its slot is free again.
	if _, err := c.Delete(ss[1]); err != nil {
		t.Fatal(err)
	}
	s, _, err := c.Establish(0x203, uplinkOnly(0)...)
	if err != nil {
		t.Fatalf("after a deletion: %v", err)
	}
	if f, _ := s.TEIDOf(1); f.TEID < 0x1004 || f.TEID > 0x1007 {
		t.Fatalf("after a deletion: TEID %#x", f.TEID)
	}
}
