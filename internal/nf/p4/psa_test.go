package p4

import (
	"encoding/json"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// A PSA program is a cube like a v1model one: entries through the cube's
// model, frames forwarded by them, dropped without (PSA's drop default),
// and the same program as a cube at the TC hook.
func TestPSACubeRoutes(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			e := Entry{Table: "FwdIngress.routes", Match: map[string]string{"hdr.ipv4.dstAddr": "198.19.0.0/16"},
				Action: "FwdIngress.forward", Params: map[string]string{"srcAddr": "02:00:00:00:00:f1", "dstAddr": "02:00:00:00:00:a1", "port": "1"}}
			c := &cube.Cube{Name: "r", Type: "p4", Hook: hook,
				Config: inline(`{"program": "../../../examples/p4/psa_l3fwd.p4"}`),
				Ports:  []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}},
				Tables: map[string]map[string]json.RawMessage{"entries": {e.Key(): nftest.Entry(e)}}}
			r := nftest.New(t, Type, c)
			res := r.Run("p0", nftest.UDP4("198.18.0.1", "198.19.0.7", 1, 2, []byte("psa")))
			if res.Port != 1 || len(res.Data) < 23 || res.Data[0] != 2 || res.Data[5] != 0xa1 || res.Data[22] != 63 {
				t.Fatalf("routed: port %d %x", res.Port, res.Data)
			}
			res = r.Run("p0", nftest.UDP4("198.18.0.1", "198.20.0.7", 1, 2, []byte("psa")))
			drop := uint32(datapath.XDPDrop)
			if hook == datapath.TC {
				drop = datapath.TCActShot
			}
			if res.Verdict != drop {
				t.Fatalf("no route: verdict %d", res.Verdict)
			}
		})
	}
}
