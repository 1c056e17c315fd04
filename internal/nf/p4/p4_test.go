package p4

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

func portfwdCube(t *testing.T, entries ...Entry) *cube.Cube {
	rows := map[string]json.RawMessage{}
	for _, e := range entries {
		rows[e.key()] = nftest.Entry(e)
	}
	return &cube.Cube{Name: "sw", Type: "p4", Hook: datapath.XDP,
		Config: json.RawMessage(`{"program": "../../../examples/p4/portfwd.p4"}`),
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
		topo.Cubes["sw"] = portfwdCube(t, c.e)
		err := topo.Validate(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.e, err, c.want)
		}
	}
	topo := cube.NewTopology()
	bad := portfwdCube(t)
	bad.Config = json.RawMessage(`{"program": "x.p4", "source": "control C( { }"}`)
	topo.Cubes["sw"] = bad
	if err := topo.Validate(nil); err == nil || !strings.Contains(err.Error(), "x.p4:1:") {
		t.Fatalf("syntax error: %v", err)
	}
}
