package p4

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

func portfwdCube(t *testing.T, entries ...Entry) *cube.Cube {
	rows := map[string]json.RawMessage{}
	for _, e := range entries {
		rows[e.Key()] = nftest.Entry(e)
	}
	return &cube.Cube{Name: "sw", Type: "p4", Hook: datapath.XDP,
		Config: inline(`{"program": "../../../examples/p4/portfwd.p4"}`),
		Ports:  []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}, {Name: "p2", Index: 2}},
		Tables: map[string]map[string]json.RawMessage{"entries": rows}}
}

func TestP4CubeForwardsByItsTableAndCounts(t *testing.T) {
	r := nftest.New(t, Type, portfwdCube(t,
		Entry{Table: "MyIngress.fwd", Match: map[string]string{"standard_metadata.ingress_port": "0"}, Action: "MyIngress.forward", Params: map[string]string{"port": "1"}},
		Entry{Table: "MyIngress.fwd", Match: map[string]string{"standard_metadata.ingress_port": "1"}, Action: "MyIngress.forward", Params: map[string]string{"port": "0"}},
	))
	frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, []byte("p4"))
	if res := r.Run("p0", frame); res.Verdict != datapath.XDPRedirect || res.Port != 1 {
		t.Fatalf("p0: verdict %d port %d", res.Verdict, res.Port)
	}
	if res := r.Run("p1", frame); res.Port != 0 {
		t.Fatalf("p1: port %d", res.Port)
	}
	if res := r.Run("p2", frame); res.Verdict != datapath.XDPDrop {
		t.Fatalf("p2 (default drop): verdict %d", res.Verdict)
	}
	v, err := listCounters(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	rows := v.([]CounterValue)
	if len(rows) != 3 || rows[0].Packets != 1 || rows[0].Bytes != uint64(len(frame)) {
		t.Fatalf("counters %+v", rows)
	}
}

func TestP4EntriesAreValidatedAgainstTheProgram(t *testing.T) {
	cases := []struct {
		e    Entry
		want string
	}{
		{Entry{Table: "MyIngress.nope", Action: "x"}, `no table "MyIngress.nope"`},
		{Entry{Table: "MyIngress.fwd", Match: map[string]string{"standard_metadata.ingress_port": "0"}, Action: "MyIngress.teleport"}, "teleport"},
		{Entry{Table: "MyIngress.fwd", Match: map[string]string{"standard_metadata.ingress_port": "0x1ff0"}, Action: "MyIngress.drop"}, "match"},
	}
	for _, c := range cases {
		topo := cube.NewTopology()
		topo.Put(portfwdCube(t, c.e))
		err := topo.Validate(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.e, err, c.want)
		}
	}
	topo := cube.NewTopology()
	bad := portfwdCube(t)
	bad.Config = inline(`{"program": "x.p4", "source": "control C( { }"}`)
	topo.Put(bad)
	if err := topo.Validate(nil); err == nil || !strings.Contains(err.Error(), "x.p4:1:") {
		t.Fatalf("syntax error: %v", err)
	}
}

func TestP4CubeRegistersViewAndWrite(t *testing.T) {
	c := &cube.Cube{Name: "sw", Type: "p4", Hook: datapath.XDP,
		Config: inline(`{"program": "../../p4/testdata/registers.p4"}`),
		Ports:  []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}}}
	r := nftest.New(t, Type, c)
	frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, []byte("p4"))
	for i := 0; i < 3; i++ {
		if res := r.Run("p0", frame); res.Verdict != datapath.XDPRedirect || res.Port != 1 {
			t.Fatalf("verdict %d port %d", res.Verdict, res.Port)
		}
	}
	idx := uint32(5)
	cells := func(name string, idx, last *uint32) RegisterCells {
		return RegisterCells{Register: name, Index: idx, Last: last}
	}
	if _, err := registerWrite(r.Handle(), r.Model, &RegisterWriteArgs{cells("cells", &idx, nil), "0x4d"}); err != nil {
		t.Fatal(err)
	}
	if _, err := registerWrite(r.Handle(), r.Model, &RegisterWriteArgs{cells("signed_cells", nil, nil), "-2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := registerWrite(r.Handle(), r.Model, &RegisterWriteArgs{cells("cells", &idx, nil), "0x1ffffffff"}); err == nil {
		t.Fatal("a value wider than the register was accepted")
	}
	big, four, six := uint32(8), uint32(4), uint32(6)
	for _, bad := range []RegisterCells{cells("cells", &big, nil), cells("cells", &four, &big), cells("cells", &six, &four), cells("cells", nil, &four), cells("nope", nil, nil)} {
		if _, err := registerWrite(r.Handle(), r.Model, &RegisterWriteArgs{bad, "1"}); err == nil {
			t.Fatalf("cells %+v accepted", bad)
		}
		if _, err := registerRead(r.Handle(), r.Model, &bad); err == nil {
			t.Fatalf("cells %+v read", bad)
		}
	}
	rng := cells("cells", &four, &six)
	read, err := registerRead(r.Handle(), r.Model, &rng)
	if err != nil {
		t.Fatal(err)
	}
	if rows := read.([]RegisterValue); len(rows) != 3 || rows[0].Index != 4 || rows[0].Value != 0 || rows[1].Value != 0x4d || rows[2].Index != 6 {
		t.Fatalf("cells 4..6: %+v", rows)
	}
	// register_reset: a v1model register's initial value is 0; bad cells
	// are refused, as for read and write
	seven := uint32(7)
	if _, err := registerWrite(r.Handle(), r.Model, &RegisterWriteArgs{cells("cells", &seven, nil), "9"}); err != nil {
		t.Fatal(err)
	}
	rst := cells("cells", &six, &seven)
	if _, err := registerReset(r.Handle(), r.Model, &rst); err != nil {
		t.Fatal(err)
	}
	if read, err := registerRead(r.Handle(), r.Model, &rst); err != nil || read.([]RegisterValue)[1].Value != 0 {
		t.Fatalf("cells 6..7 after reset: %+v %v", read, err)
	}
	for _, bad := range []RegisterCells{cells("cells", &big, nil), cells("nope", nil, nil)} {
		if _, err := registerReset(r.Handle(), r.Model, &bad); err == nil {
			t.Fatalf("reset of cells %+v accepted", bad)
		}
	}
	v, err := listRegisters(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, row := range v.([]RegisterValue) {
		got[fmt.Sprintf("%s[%d]", row.Register, row.Index)] = row.Value
	}
	want := map[string]uint64{"Ig.per_port[0]": 3, "Ig.cells[5]": 0x4d, "Ig.signed_cells[0]": 0xfe, "Ig.signed_cells[1]": 0xfe}
	if len(got) != len(want) {
		t.Fatalf("registers %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("registers %v, want %v", got, want)
		}
	}
}

func TestP4CubeMeters(t *testing.T) {
	c := &cube.Cube{Name: "sw", Type: "p4", Hook: datapath.XDP,
		Config: inline(`{"program": "../../p4/testdata/meters.p4"}`),
		Ports:  []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}}}
	r := nftest.New(t, Type, c)
	frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, []byte("p4"))
	idx := uint32(0)
	if _, err := meterSet(r.Handle(), r.Model, &MeterSetArgs{Meter: "pkt_meter", Index: &idx, CBurst: 1, PBurst: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := meterSet(r.Handle(), r.Model, &MeterSetArgs{Meter: "pkt_meter", Index: &idx, CIR: 5, PIR: 1}); err == nil {
		t.Fatal("PIR < CIR was accepted")
	}
	if res := r.Run("p0", frame); res.Verdict != datapath.XDPRedirect {
		t.Fatalf("first packet (GREEN): verdict %d", res.Verdict)
	}
	if res := r.Run("p0", frame); res.Verdict != datapath.XDPDrop {
		t.Fatalf("second packet (RED): verdict %d", res.Verdict)
	}
	v, err := listMeters(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	rows := v.([]MeterValue)
	if len(rows) != 1 || rows[0].Meter != "Ig.pkt_meter" || rows[0].CBurst != 1 || rows[0].Unit != "packets" {
		t.Fatalf("meters %+v", rows)
	}
	if _, err := meterSet(r.Handle(), r.Model, &MeterSetArgs{Meter: "pkt_meter", Reset: true}); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("p0", frame); res.Verdict != datapath.XDPRedirect {
		t.Fatalf("after reset (GREEN): verdict %d", res.Verdict)
	}
}
