package model

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
)

func TestParseFlow(t *testing.T) {
	p := netip.MustParsePrefix
	for _, tc := range []struct {
		in   string
		want Flow
	}{
		{"permit out ip from any to assigned", Flow{}},
		{"permit out 17 from 198.51.100.0/24 5000-5010,6000 to assigned 7000",
			Flow{Proto: 17, Remote: p("198.51.100.0/24"), RemotePorts: []PortRange{{5000, 5010}, {6000, 6000}}, LocalPorts: []PortRange{{7000, 7000}}}},
		// "assigned" on the from side: the UE is still Local.
		{"permit out tcp from assigned 80 to 203.0.113.9", Flow{Proto: 6, Remote: p("203.0.113.9/32"), LocalPorts: []PortRange{{80, 80}}}},
		{"permit out icmpv6 from 2001:db8::/32 to 2001:db8:100::1", Flow{Proto: 58, Remote: p("2001:db8::/32"), Local: p("2001:db8:100::1/128")}},
		{"permit out UDP from 10.1.2.3/16 to any", Flow{Proto: 17, Remote: p("10.1.0.0/16")}},
	} {
		got, err := ParseFlow(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, err string }{
		{"deny out ip from any to assigned", `must be "permit"`},
		{"permit in ip from any to assigned", `must be "out"`},
		{"permit out foo from any to assigned", "unknown protocol"},
		{"permit out ip from any", `ends before the "to"`},
		{"permit out ip from assigned to assigned", "both sides"},
		{"permit out ip from !10.0.0.0/8 to assigned", "negated"},
		{"permit out icmp from any 80 to assigned", "ports only apply"},
		{"permit out udp from any 90-80 to assigned", "invalid port range"},
		{"permit out udp from any 1,2,3,4,5,6,7,8,9 to assigned", "at most 8"},
		{"permit out ip from 10.0.0.1 to 2001:db8::1", "mixes IPv4 and IPv6"},
		{"permit out ip from any to assigned frag", "options (frag) are not supported"},
	} {
		if _, err := ParseFlow(tc.in); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %v, want an error with %q", tc.in, err, tc.err)
		}
	}
}

func testCube() *cube.Cube {
	return &cube.Cube{Name: "u1", Type: "upf",
		Config: json.RawMessage(`{"teid_range":"0x1000-0x1fff","ue_pools":[{"prefix":"10.45.0.0/16"}]}`),
		Ports: []cube.Port{
			{Name: PortN3, Index: 0, Addresses: []string{"198.18.1.1/24", "2001:db8:1::1/64"}},
			{Name: PortN6, Index: 1, Addresses: []string{"198.18.2.1/24"}},
		}}
}

func session(mod func(s *Session)) *Session {
	s := &Session{SEID: 7,
		PDRs: []PDR{
			{ID: 1, Precedence: 10, Source: "access", FTEID: &FTEID{TEID: 0x1001}, OuterHeaderRemoval: "gtp-u", FAR: 1, QERs: []uint32{1}, URRs: []uint32{1}},
			{ID: 2, Precedence: 10, Source: "core", UEIPv4: "10.45.0.1", FAR: 2, URRs: []uint32{1}},
		},
		FARs: []FAR{
			{ID: 1, Action: []string{"forw"}, Destination: "core"},
			{ID: 2, Action: []string{"forw"}, Destination: "access", OuterHeader: &OuterHeader{TEID: 0x9001, Address: "198.18.1.2"}},
		},
		QERs: []QER{{ID: 1, MBRUL: 1000}},
		URRs: []URR{{ID: 1, Measure: []string{"volume"}}},
	}
	if mod != nil {
		mod(s)
	}
	return s
}

func TestSessionValidate(t *testing.T) {
	c := testCube()
	s := session(nil)
	if err := s.Validate(c); err != nil {
		t.Fatal(err)
	}
	// Canonical form: the F-TEID gets the n3 addresses, the FARs their
	// ports, the gates their defaults.
	if f := s.PDRs[0].FTEID; f.IPv4 != "198.18.1.1" || f.IPv6 != "2001:db8:1::1" {
		t.Errorf("F-TEID %+v", f)
	}
	if s.FARs[0].Port != PortN6 || s.FARs[1].Port != PortN3 || s.QERs[0].GateUL != "open" {
		t.Errorf("defaults: %+v %+v", s.FARs, s.QERs)
	}
	for _, tc := range []struct {
		mod   func(s *Session)
		field string
	}{
		{func(s *Session) { s.SEID = 0 }, "seid"},
		{func(s *Session) { s.PDRs[0].FAR = 9 }, "pdrs[0].far"},
		{func(s *Session) { s.PDRs[0].FTEID.TEID = 0x5000 }, "pdrs[0].f_teid.teid"},
		{func(s *Session) { s.PDRs[0].OuterHeaderRemoval = "" }, "pdrs[0].outer_header_removal"},
		{func(s *Session) { s.PDRs[1].QERs = []uint32{4} }, "pdrs[1]"},
		{func(s *Session) { s.PDRs[1].SDF = []SDF{{FlowDescription: "permit in ip from any to assigned"}} }, "pdrs[1].sdf[0]"},
		{func(s *Session) { s.FARs = append(s.FARs, FAR{ID: 2, Action: []string{"drop"}}) }, "fars[2].id"},
		{func(s *Session) { s.FARs[0].Action = []string{"dupl"} }, "fars[0]"},
		{func(s *Session) { s.FARs[1].OuterHeader.TEID = 0 }, "fars[1].outer_header_creation.teid"},
		{func(s *Session) {
			s.FARs[0].OuterHeader = &OuterHeader{TEID: 1, Address: "198.18.2.9"}
			s.FARs[0].Port = PortN6
		}, "fars[0].outer_header_creation"},
		{func(s *Session) { s.QERs[0].QFI = 64 }, "qers[0].qfi"},
		{func(s *Session) { s.QERs[0].GateDL = "half" }, "qers[0].gate_dl"},
		{func(s *Session) { s.URRs[0].Measure = []string{"event"} }, "urrs[0].measurement_method"},
		{func(s *Session) { s.URRs[0].Triggers = []string{"sometimes"} }, "urrs[0].reporting_triggers"},
		{func(s *Session) { s.PDRs = nil }, "pdrs"},
	} {
		err := session(tc.mod).Validate(c)
		var fe *cube.FieldError
		if err == nil || !asField(err, &fe) || !strings.HasPrefix(fe.Field, tc.field) {
			t.Errorf("want an error on %s, got %v", tc.field, err)
		}
	}
}

func asField(err error, fe **cube.FieldError) bool {
	e, ok := err.(*cube.FieldError)
	if ok {
		*fe = e
	}
	return ok
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct{ cfg, field string }{
		{`{"pfcp":{"address":"0.0.0.0"}}`, "pfcp.address"},
		{`{"pfcp":{"address":"127.0.0.1","t1_ms":10}}`, "pfcp.t1_ms"},
		{`{"teid_range":"0-5"}`, "teid_range"},
		{`{"ue_pools":[{"prefix":"10.0.0.0/8"},{"prefix":"10.45.0.0/16"}]}`, "ue_pools[1].prefix"},
		{`{"ue_pools":[{"prefix":"2001:db8::/64"}]}`, "ue_pools[0].prefix"},
		{`{"buffer_packets":5000}`, "buffer_packets"},
		{`{"node_id":"bad name!"}`, "node_id"},
		{`{"recovery_time":"yesterday"}`, "recovery_time"},
	} {
		c := testCube()
		c.Config = json.RawMessage(tc.cfg)
		_, err := DecodeConfig(c)
		var fe *cube.FieldError
		if err == nil || !asField(err, &fe) || fe.Field != "config."+tc.field {
			t.Errorf("%s: want an error on config.%s, got %v", tc.cfg, tc.field, err)
		}
	}
	c := testCube()
	c.Ports = append(c.Ports, cube.Port{Name: "wan", Index: 2})
	if _, err := DecodeConfig(c); err == nil || !strings.Contains(err.Error(), "n3, n6 and n9") {
		t.Errorf("a port named wan: %v", err)
	}
}

// The N4 endpoint names the interface holding its address, so that a
// tenant's upf listens only where the tenant was given an interface.
func TestPFCPInterface(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		want []string
	}{
		{`{}`, nil},
		{`{"pfcp":{"address":"127.0.0.88"}}`, []string{"lo"}},
		{`{"pfcp":{"address":"192.0.2.77"}}`, nil}, // on no interface: binding it fails
	} {
		v, err := cube.Decode("config", json.RawMessage(tc.cfg), &Config{})
		if err != nil {
			t.Fatal(err)
		}
		if got := v.(*Config).Interfaces(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.cfg, got, tc.want)
		}
	}
}

// TestQFIsAreNumbers: a PDR's QFIs are a JSON array of numbers both ways
// (as the document says), and state saved with the base64 form of earlier
// versions still loads.
func TestQFIsAreNumbers(t *testing.T) {
	out, err := json.Marshal(PDR{QFI: QFIs{9, 5}})
	if err != nil || !strings.Contains(string(out), `"qfi":[9,5]`) {
		t.Fatalf("marshalled as %s (%v), want \"qfi\":[9,5]", out, err)
	}
	for _, in := range []string{`{"qfi":[9,5]}`, `{"qfi":"CQU="}`} {
		var p PDR
		if err := json.Unmarshal([]byte(in), &p); err != nil || !reflect.DeepEqual(p.QFI, QFIs{9, 5}) {
			t.Errorf("%s read as %v (%v), want [9 5]", in, p.QFI, err)
		}
	}
}
