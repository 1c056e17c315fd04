package agent_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/edgenf/edgenf/internal/pfcp"
	"github.com/edgenf/edgenf/internal/pfcp/client"
)

// DUPL over PFCP: Duplicating Parameters become the FAR's duplicate, Update
// Duplicating Parameters change it, an Apply Action without DUPL removes it;
// more than one destination is refused.
func TestDuplicatingParameters(t *testing.T) {
	e, c, _ := setup(t)
	if _, err := c.Associate(); err != nil {
		t.Fatal(err)
	}
	li := netip.MustParseAddr("198.18.1.9")
	rules := basic(0x9000)
	rules[3] = client.FAR{ID: 2, Action: pfcp.ActionFORW | pfcp.ActionDUPL, Dest: pfcp.InterfaceAccess, TunnelTEID: 0x9000,
		Tunnel: netip.MustParseAddr("198.18.1.2"), Dup: &client.Dup{Dest: pfcp.InterfaceLI, TunnelTEID: 0x7001, Tunnel: li}}.IE()
	s, _, err := c.Establish(0x600, rules...)
	if err != nil {
		t.Fatal(err)
	}
	far := func() string {
		t.Helper()
		ss := sessions(t, e)
		if len(ss) != 1 {
			t.Fatalf("%d sessions", len(ss))
		}
		f := ss[0].Far(2)
		if f.Duplicate == nil {
			return "none " + f.Action[0]
		}
		d := f.Duplicate
		return d.Destination + " " + d.Port + " " + d.OuterHeader.Address + " " + hex(d.OuterHeader.TEID)
	}
	if got := far(); got != "li-function n3 198.18.1.9 0x7001" {
		t.Fatalf("duplicate %s", got)
	}
	if _, err := c.Modify(s, client.FAR{ID: 2, Action: pfcp.ActionFORW | pfcp.ActionDUPL,
		Dup: &client.Dup{Dest: pfcp.InterfaceLI, TunnelTEID: 0x7002, Tunnel: li}}.UpdateIE()); err != nil {
		t.Fatal(err)
	}
	if got := far(); got != "li-function n3 198.18.1.9 0x7002" {
		t.Fatalf("duplicate after the update %s", got)
	}
	if _, err := c.Modify(s, client.FAR{ID: 2, Action: pfcp.ActionFORW}.UpdateIE()); err != nil {
		t.Fatal(err)
	}
	if got := far(); got != "none forw" {
		t.Fatalf("duplicate after dupl went: %s", got)
	}

	// Two destinations; DUPL without one.
	two := client.FAR{ID: 2, Action: pfcp.ActionFORW | pfcp.ActionDUPL, Dest: pfcp.InterfaceCore,
		Dup: &client.Dup{Dest: pfcp.InterfaceLI, TunnelTEID: 1, Tunnel: li}}.IE()
	two.Children = append(two.Children, two.Children[len(two.Children)-1])
	for _, tc := range []struct {
		name  string
		far   *pfcp.IE
		cause pfcp.Cause
	}{
		{"two duplicating destinations", two, pfcp.CauseServiceNotSupported},
		{"dupl without duplicating parameters", client.FAR{ID: 2, Action: pfcp.ActionFORW | pfcp.ActionDUPL, Dest: pfcp.InterfaceCore}.IE(), pfcp.CauseRuleFailure},
	} {
		r := basic(0x9001)
		r[3] = tc.far
		if _, resp, err := c.Establish(0x601, r...); err == nil || client.CauseOf(resp) != tc.cause {
			t.Fatalf("%s: %v, want cause %s", tc.name, err, tc.cause)
		} else if fr := resp.IEs.Find(pfcp.IEFailedRuleID); fr == nil {
			t.Fatalf("%s: no Failed Rule ID", tc.name)
		}
	}
}

func hex(v uint32) string { return fmt.Sprintf("%#x", v) }
