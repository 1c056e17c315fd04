package portfwd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

func model(hook datapath.Hook, rules ...Rule) *cube.Cube {
	rows := map[string]json.RawMessage{}
	for _, r := range rules {
		rows[r.InPort] = nftest.Entry(r)
	}
	return &cube.Cube{Name: "pf", Type: "portfwd", Hook: hook,
		Ports:  []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}, {Name: "p2", Index: 5}},
		Tables: map[string]map[string]json.RawMessage{"rules": rows}}
}

var hooks = []struct {
	hook             datapath.Hook
	sent, drop, pass uint32
}{
	{datapath.XDP, datapath.XDPRedirect, datapath.XDPDrop, datapath.XDPPass},
	{datapath.TC, datapath.TCActRedirect, datapath.TCActShot, datapath.TCActOK},
}

func TestForwardPicksPortAndRewritesMACs(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook,
				Rule{InPort: "p0", OutPort: "p2", SrcMAC: "02:aa:00:00:00:01", DstMAC: "02:bb:00:00:00:02"},
				Rule{InPort: "p2", OutPort: "p0"}))
			frame := nftest.UDP4("198.18.0.1", "198.19.0.1", 1000, 2000, []byte("hello"))

			res := r.Run("p0", frame)
			if res.Verdict != h.sent || res.Port != 5 {
				t.Fatalf("p0: verdict %d port %d, want %d port 5", res.Verdict, res.Port, h.sent)
			}
			if !bytes.Equal(res.Data[0:6], nftest.MAC("02:bb:00:00:00:02")) || !bytes.Equal(res.Data[6:12], nftest.MAC("02:aa:00:00:00:01")) {
				t.Fatalf("MACs not rewritten: % x", res.Data[:12])
			}
			if !bytes.Equal(res.Data[12:], frame[12:]) {
				t.Fatal("payload changed")
			}

			res = r.Run("p2", frame)
			if res.Port != 0 || !bytes.Equal(res.Data, frame) {
				t.Fatalf("p2: port %d, frame changed=%v", res.Port, !bytes.Equal(res.Data, frame))
			}
			st := r.Stats()
			if st[0].RxPackets != 1 || st[5].TxPackets != 1 || st[5].RxPackets != 1 || st[0].TxPackets != 1 ||
				st[0].TxBytes != uint64(len(frame)) {
				t.Fatalf("counters: p0 %+v p2 %+v", st[0], st[5])
			}
		})
	}
}

func TestVerdictsDropPassPunt(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook,
				Rule{InPort: "p0", Action: "drop"},
				Rule{InPort: "p1", Action: "pass"},
				Rule{InPort: "p2", Action: "punt"}))
			frame := nftest.UDP4("198.18.0.1", "198.19.0.1", 1, 2, nil)
			if v := r.Run("p0", frame).Verdict; v != h.drop {
				t.Errorf("drop rule: verdict %d", v)
			}
			if v := r.Run("p1", frame).Verdict; v != h.pass {
				t.Errorf("pass rule: verdict %d", v)
			}
			if res := r.Run("p2", frame); res.Verdict != h.drop || res.Sent() {
				t.Errorf("punt rule: verdict %d port %d", res.Verdict, res.Port)
			}
			st := r.Stats()
			if st[0].DropPackets != 1 || st[0].DropBytes != uint64(len(frame)) || st[5].PuntPackets != 1 {
				t.Fatalf("counters: p0 %+v p2 %+v", st[0], st[5])
			}
		})
	}
}

func TestNoRuleOrUnpeeredPortDrops(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, Rule{InPort: "p0", OutPort: "p1"}))
	// No rule for p1.
	if res := r.Run("p1", nftest.UDP4("198.18.0.1", "198.19.0.1", 1, 2, nil)); res.Verdict != datapath.XDPDrop {
		t.Fatalf("no rule: verdict %d", res.Verdict)
	}
	// p1 unpeered.
	if err := r.Prog.SetHop(1, datapath.Hop{}); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("p0", nftest.UDP4("198.18.0.1", "198.19.0.1", 1, 2, nil)); res.Verdict != datapath.XDPDrop || res.Sent() {
		t.Fatalf("unpeered: verdict %d port %d", res.Verdict, res.Port)
	}
}

func TestRuleValidation(t *testing.T) {
	cases := []struct {
		rule Rule
		want string
	}{
		{Rule{InPort: "nope", OutPort: "p1"}, "in_port: cube pf has no port \"nope\""},
		{Rule{InPort: "p0"}, "out_port: required"},
		{Rule{InPort: "p0", OutPort: "p9"}, "out_port: cube pf has no port \"p9\""},
		{Rule{InPort: "p0", Action: "mirror"}, "action: unknown action \"mirror\""},
		{Rule{InPort: "p0", OutPort: "p1", SrcMAC: "zz"}, "src_mac: invalid MAC"},
		{Rule{InPort: "p0", Action: "drop", OutPort: "p1"}, "only action forward"},
	}
	for _, c := range cases {
		topo := cube.NewTopology()
		topo.Put(model(datapath.XDP, c.rule))
		err := topo.Validate(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.rule, err, c.want)
		}
	}
}
