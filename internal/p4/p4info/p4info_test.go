package p4info_test

import (
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/p4test"
)

func model(t *testing.T, path string) *p4info.P4Info {
	t.Helper()
	prog, _, err := p4.Check(p4test.File(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return p4info.FromIR(prog)
}

func TestModelJSON(t *testing.T) {
	m := model(t, "../../../examples/p4/l3router.p4")
	b, err := m.MarshalP4Info()
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["edgenf"]; ok {
		t.Error("P4Info JSON carries the edgenf section")
	}
	s := string(b)
	for _, want := range []string{`"name": "MyIngress.ipv4_lpm"`, `"alias": "ipv4_lpm"`, `"matchType": "LPM"`, `"bitwidth": 32`,
		`"name": "hdr.ipv4.dstAddr"`, `"size": "1024"`, `"name": "MyIngress.ipv4_forward"`, `"arch": "v1model"`} {
		if !strings.Contains(s, want) {
			t.Errorf("P4Info JSON lacks %s", want)
		}
	}
	var lpm *p4info.Table
	for _, tb := range m.Tables {
		if tb.Preamble.Name == "MyIngress.ipv4_lpm" {
			lpm = tb
		}
	}
	if lpm == nil || lpm.Preamble.ID>>24 != 0x02 || len(lpm.ActionRefs) != 3 {
		t.Fatalf("bad table %+v", lpm)
	}
	// p4c assigns this id to MyIngress.ipv4_lpm (tutorials' basic.p4)
	if lpm.Preamble.ID != 37375156 {
		t.Errorf("id %d", lpm.Preamble.ID)
	}
	full, _ := json.Marshal(m)
	var back p4info.P4Info
	if err := json.Unmarshal(full, &back); err != nil || back.Edgenf == nil || len(back.Edgenf.Tables) != 2 {
		t.Fatalf("model does not round-trip: %v", err)
	}
}

func TestIDsAndCounters(t *testing.T) {
	m := model(t, "../../../examples/p4/l2switch.p4")
	if len(m.DirectCounters) != 1 || m.DirectCounters[0].Preamble.ID>>24 != 0x13 || m.DirectCounters[0].Spec.Unit != "BOTH" {
		t.Errorf("direct counter: %+v", m.DirectCounters)
	}
	if m.Tables[0].Preamble.Name != "SwIngress.mac_table" || m.Tables[0].ConstDefaultActionID == 0 {
		t.Errorf("@name / const default: %+v", m.Tables[0])
	}
	if m.Tables[0].MatchFields[1].Name != "dst" || m.Tables[0].ActionRefs[2].Scope != "DEFAULT_ONLY" {
		t.Errorf("key @name / @defaultonly: %+v", m.Tables[0])
	}
	m = model(t, "../../../examples/p4/portfwd.p4")
	if len(m.Counters) != 1 || m.Counters[0].Preamble.ID>>24 != 0x12 || m.Counters[0].Size != "64" {
		t.Errorf("counter: %+v", m.Counters)
	}
	m = model(t, "../testdata/features.p4")
	found := false
	for _, a := range m.Actions {
		if a.Preamble.Name == "Ig.fwd" {
			found = a.Preamble.ID == 0x01000042
		}
	}
	if !found {
		t.Error("@id not honoured")
	}
}

func TestParseValue(t *testing.T) {
	cases := []struct {
		s    string
		w    int
		want string
	}{
		{"198.18.0.1", 32, "c6120001"},
		{"0x0800", 16, "800"},
		{"1024", 16, "400"},
		{"0b101", 3, "5"},
		{"aa:bb:cc:dd:ee:ff", 48, "aabbccddeeff"},
		{"2001:db8::1", 128, "20010db8000000000000000000000001"},
		{"-1", 8, "ff"},
		{"1_000", 16, "3e8"},
	}
	for _, c := range cases {
		v, err := p4info.ParseValue(c.s, c.w)
		if err != nil || v.Text(16) != c.want {
			t.Errorf("%s: %v %v, want %s", c.s, v, err, c.want)
		}
	}
	for _, bad := range []string{"256", "1.2.3", "zz", "", "gg:00:00:00:00:00"} {
		if _, err := p4info.ParseValue(bad, 8); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestEncodeEntries(t *testing.T) {
	m := model(t, "../../../examples/p4/l3router.p4")
	lpm := m.Edgenf.Table("ipv4_lpm")
	e, err := lpm.EncodeEntry([]p4info.Match{{Field: "hdr.ipv4.dstAddr", Value: "198.18.0.0/24"}}, "ipv4_forward",
		[]p4info.Arg{{Name: "dstAddr", Value: "00:00:00:00:00:a1"}, {Name: "port", Value: "3"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if binary.NativeEndian.Uint32(e.Key) != 24 || string(e.Key[4:]) != "\xc6\x12\x00\x00" {
		t.Errorf("lpm key %x", e.Key)
	}
	a := lpm.Action("MyIngress.ipv4_forward")
	if binary.NativeEndian.Uint32(e.Value) != a.ID || e.Value[lpm.ParamOffset+5] != 0xa1 || e.Value[lpm.ParamOffset+7] != 3 {
		t.Errorf("value %x", e.Value)
	}
	if _, err := lpm.EncodeEntry([]p4info.Match{{Field: "dstAddr", Value: "198.18.0.0/33"}}, "drop", nil, 0); err == nil {
		t.Error("bad prefix accepted")
	}
	if _, err := lpm.EncodeEntry([]p4info.Match{{Field: "dstAddr", Value: "198.18.0.0/8"}}, "ipv4_forward", []p4info.Arg{{Name: "port", Value: "1"}}, 0); err == nil {
		t.Error("missing parameter accepted")
	}
	if _, err := lpm.EncodeEntry(nil, "nope", nil, 0); err == nil {
		t.Error("unknown action accepted")
	}

	m = model(t, "../../../examples/p4/acl.p4")
	acl := m.Edgenf.Table("acl")
	if acl.Kind != "scan" {
		t.Fatalf("acl kind %s", acl.Kind)
	}
	e, err = acl.EncodeEntry([]p4info.Match{
		{Field: "hdr.ipv4.srcAddr", Value: "0x0a000000&&&0xff000000"},
		{Field: "hdr.ipv4.protocol", Value: "0x0*"},
		{Field: "meta.dport", Value: "1024->2048"},
	}, "deny", nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Scan || binary.NativeEndian.Uint32(e.Value) != 7 {
		t.Fatalf("scan entry %x", e.Value)
	}
	var src, proto, dport *p4info.KeyLayout
	for _, k := range acl.Keys {
		switch k.Name {
		case "hdr.ipv4.srcAddr":
			src = k
		case "hdr.ipv4.protocol":
			proto = k
		case "meta.dport":
			dport = k
		}
	}
	val, mask := e.Value[8:], e.Value[8+acl.KeyBytes:]
	if val[src.Offset] != 0x0a || mask[src.Offset] != 0xff || mask[src.Offset+1] != 0 {
		t.Errorf("ternary src %x / %x", val, mask)
	}
	if val[proto.Offset] != 0 || mask[proto.Offset] != 0xf0 {
		t.Errorf("nibble wildcard %x/%x", val[proto.Offset], mask[proto.Offset])
	}
	r := e.Value[acl.EntryRangeOffset+dport.RangeOffset:]
	if binary.BigEndian.Uint16(r) != 1024 || binary.BigEndian.Uint16(r[2:]) != 2048 {
		t.Errorf("range %x", r[:4])
	}
	if _, err := acl.EncodeEntry(nil, "deny", nil, 0); err == nil {
		t.Error("scan entry without priority accepted")
	}
	if _, err := acl.EncodeEntry([]p4info.Match{{Field: "meta.dport", Value: "9->3"}}, "deny", nil, 1); err == nil {
		t.Error("empty range accepted")
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	m := model(t, "../../../examples/p4/l3router.p4")
	lpm := m.Edgenf.Table("ipv4_lpm")
	fwd := lpm.Action("ipv4_forward")
	e, err := lpm.EncodeBinary([]p4info.FieldMatch{{FieldID: 1, Value: []byte{198, 18, 5, 0}, PrefixLen: 24}},
		p4info.ActionData{ActionID: fwd.ID, Params: map[uint32][]byte{1: {0xa1}, 2: {0x01, 0x02}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := lpm.DecodeEntry(e.Key, e.Value)
	if err != nil {
		t.Fatal(err)
	}
	if d.Matches[0].PrefixLen != 24 || string(d.Matches[0].Value) != "\xc6\x12\x05\x00" || d.Action.ActionID != fwd.ID ||
		string(d.Action.Params[1]) != "\xa1" || string(d.Action.Params[2]) != "\x01\x02" {
		t.Errorf("decoded %+v", d)
	}
	if _, err := lpm.EncodeBinary(nil, p4info.ActionData{ActionID: 12345}, 0); err == nil {
		t.Error("unknown action id accepted")
	}

	m = model(t, "../../../examples/p4/acl.p4")
	acl := m.Edgenf.Table("acl")
	var src, dport uint32
	for _, k := range acl.Keys {
		switch k.Name {
		case "hdr.ipv4.srcAddr":
			src = k.ID
		case "meta.dport":
			dport = k.ID
		}
	}
	deny := acl.Action("deny")
	e, err = acl.EncodeBinary([]p4info.FieldMatch{
		{FieldID: src, Value: []byte{10, 0, 0, 0}, Mask: []byte{255, 0, 0, 0}},
		{FieldID: dport, Low: []byte{4, 0}, High: []byte{8, 0}},
	}, p4info.ActionData{ActionID: deny.ID}, 9)
	if err != nil {
		t.Fatal(err)
	}
	d, err = acl.DecodeEntry(nil, e.Value)
	if err != nil {
		t.Fatal(err)
	}
	if d.Priority != 9 || d.Action.ActionID != deny.ID {
		t.Errorf("decoded %+v", d)
	}
	for _, fm := range d.Matches {
		switch fm.FieldID {
		case src:
			if string(fm.Value) != "\x0a\x00\x00\x00" || string(fm.Mask) != "\xff\x00\x00\x00" {
				t.Errorf("src %+v", fm)
			}
		case dport:
			if string(fm.Low) != "\x04\x00" || string(fm.High) != "\x08\x00" {
				t.Errorf("dport %+v", fm)
			}
		}
	}
}

func TestRegisters(t *testing.T) {
	m := model(t, "../testdata/registers.p4")
	if len(m.Registers) != 4 || len(m.Edgenf.Registers) != 4 {
		t.Fatalf("registers: %d %d", len(m.Registers), len(m.Edgenf.Registers))
	}
	for _, r := range m.Registers {
		if r.Preamble.ID>>24 != 0x16 {
			t.Errorf("%s: id %#x without the REGISTER prefix 0x16", r.Preamble.Name, r.Preamble.ID)
		}
	}
	l := m.Edgenf.Register("signed_cells")
	if l == nil || l.Name != "Ig.signed_cells" || l.Width != 8 || !l.Signed || l.Size != 2 || l.Map == "" {
		t.Fatalf("signed_cells layout %+v", l)
	}
	if f := m.Edgenf.Register("flag"); f == nil || !f.Bool || f.Width != 1 {
		t.Fatalf("flag layout %+v", f)
	}
	b, err := m.MarshalP4Info()
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"registers"`, `"name": "Ig.cells"`, `"int": {`, `"bool": {}`, `"size": 64`} {
		if !strings.Contains(s, want) {
			t.Errorf("P4Info JSON lacks %s", want)
		}
	}
}

func TestMeters(t *testing.T) {
	m := model(t, "../testdata/meters.p4")
	if len(m.Meters) != 2 || len(m.Edgenf.Meters) != 2 {
		t.Fatalf("meters: %d %d", len(m.Meters), len(m.Edgenf.Meters))
	}
	for _, me := range m.Meters {
		if me.Preamble.ID>>24 != 0x14 {
			t.Errorf("%s: id %#x without the METER prefix 0x14", me.Preamble.Name, me.Preamble.ID)
		}
	}
	if l := m.Edgenf.Meter("byte_meter"); l == nil || l.Unit != "bytes" || l.Size != 4 || l.Map == "" {
		t.Fatalf("byte_meter layout %+v", l)
	}
	b, _ := m.MarshalP4Info()
	for _, want := range []string{`"meters"`, `"unit": "PACKETS"`, `"unit": "BYTES"`, `"size": "4"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("P4Info JSON lacks %s", want)
		}
	}
}
