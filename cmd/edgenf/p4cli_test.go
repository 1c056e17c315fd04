package main

import (
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// What sh hands table-add for an unquoted "=>" or range "lo->hi" (its ">"
// redirected into a file named after the next word) is refused saying so,
// not as a count of match values; quoted, the same entry is taken.
func TestTableAddSaysWhatTheShellDidToArrows(t *testing.T) {
	info := &p4info.P4Info{
		Tables: []*p4info.Table{
			{Preamble: p4info.Preamble{Name: "MyIngress.ipv4_lpm"}, MatchFields: []p4info.MatchField{{Name: "hdr.ipv4.dstAddr", MatchType: "LPM"}}},
			{Preamble: p4info.Preamble{Name: "MyIngress.ports"}, MatchFields: []p4info.MatchField{{Name: "meta.dport", MatchType: "RANGE"}}},
		},
		Actions: []*p4info.Action{
			{Preamble: p4info.Preamble{Name: "MyIngress.ipv4_forward"}, Params: []p4info.Param{{Name: "dst"}, {Name: "port"}}},
			{Preamble: p4info.Preamble{Name: "MyIngress.deny"}},
		},
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ipv4_lpm", "ipv4_forward", "198.18.1.0/24", "=", "1"}, `a lone "=": the shell took the ">" of an unquoted =>`},
		{[]string{"ports", "deny", "1024-", "=>", "10"}, `"1024-": the shell took the ">" of an unquoted range lo->hi for a redirection (into a file named after hi): quote it, '1024->hi'`},
	} {
		if _, err := bmv2Entry(info, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
	if e, err := bmv2Entry(info, []string{"ipv4_lpm", "ipv4_forward", "198.18.1.0/24", "=>", "02:00:00:00:01:01", "1"}); err != nil || e["params"] == nil {
		t.Errorf("quoted: %v, %v", e, err)
	}
}
