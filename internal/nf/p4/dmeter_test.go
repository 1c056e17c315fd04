package p4

import (
	"encoding/json"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// TestP4CubeDirectMeter: meter_te.p4 as a cube; the flow's direct meter is
// configured through the direct_meter_set action: within the committed
// burst the flow takes port 1, above it port 2, above the peak it drops.
func TestP4CubeDirectMeter(t *testing.T) {
	e := Entry{Table: "TeIngress.flows", Match: map[string]string{"hdr.ipv4.srcAddr": "198.18.0.1", "hdr.ipv4.dstAddr": "198.18.0.2"},
		Action: "TeIngress.route", Params: map[string]string{"port": "1", "alt_port": "2"}}
	c := &cube.Cube{Name: "te", Type: "p4", Hook: datapath.XDP,
		Config: inline(`{"program": "../../../examples/p4/meter_te.p4"}`),
		Ports:  []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}, {Name: "p2", Index: 2}},
		Tables: map[string]map[string]json.RawMessage{"entries": {e.Key(): nftest.Entry(e)}}}
	r := nftest.New(t, Type, c)
	frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, []byte("p4"))
	n := uint64(len(frame))
	if _, err := directMeterSet(r.Handle(), r.Model, &DirectMeterSetArgs{Table: "flows", Match: e.Match, CBurst: n, PBurst: 2 * n}); err != nil {
		t.Fatal(err)
	}
	if _, err := directMeterSet(r.Handle(), r.Model, &DirectMeterSetArgs{Table: "flows", Match: map[string]string{"hdr.ipv4.srcAddr": "198.18.0.9", "hdr.ipv4.dstAddr": "198.18.0.2"}, CBurst: 1}); err == nil {
		t.Fatal("a meter for a missing entry was accepted")
	}
	for i, want := range []int{1, 2, -1} {
		res := r.Run("p0", frame)
		if want < 0 {
			if res.Verdict != datapath.XDPDrop {
				t.Fatalf("packet %d (RED): verdict %d", i, res.Verdict)
			}
			continue
		}
		if res.Verdict != datapath.XDPRedirect || res.Port != want {
			t.Fatalf("packet %d: verdict %d port %d, want port %d", i, res.Verdict, res.Port, want)
		}
	}
	if _, err := directMeterSet(r.Handle(), r.Model, &DirectMeterSetArgs{Table: "flows", Match: e.Match, Reset: true}); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("p0", frame); res.Port != 1 {
		t.Fatalf("after reset (GREEN): port %d", res.Port)
	}
}
