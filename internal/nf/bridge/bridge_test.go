package bridge

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/ktime"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

const (
	macA = "02:00:00:00:00:0a"
	macB = "02:00:00:00:00:0b"
	macC = "02:00:00:00:00:0c"
)

// frame builds an Ethernet (optionally 802.1Q-tagged) IPv4/UDP frame.
func frame(src, dst string, vid int) []byte {
	eth := &layers.Ethernet{SrcMAC: nftest.MAC(src), DstMAC: nftest.MAC(dst), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP("198.18.0.1"), DstIP: net.ParseIP("198.18.0.2")}
	udp := &layers.UDP{SrcPort: 1, DstPort: 2}
	pl := gopacket.Payload([]byte("0123456789abcdef0123456789"))
	if vid == 0 {
		return nftest.Serialize(eth, ip, udp, pl)
	}
	eth.EthernetType = layers.EthernetTypeDot1Q
	tag := &layers.Dot1Q{VLANIdentifier: uint16(vid), Type: layers.EthernetTypeIPv4}
	return nftest.Serialize(eth, tag, ip, udp, pl)
}

func pcfg(s string) json.RawMessage { return json.RawMessage(s) }

// flat: three access ports in VLAN 1.
func flat(hook datapath.Hook) *cube.Cube {
	return &cube.Cube{Name: "br", Type: "bridge", Hook: hook,
		Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}, {Name: "p2", Index: 2}}}
}

// vlanned: p0 access 10, p1 trunk 10,20 native 30, p2 access 20, p3 access 10.
func vlanned(hook datapath.Hook) *cube.Cube {
	return &cube.Cube{Name: "br", Type: "bridge", Hook: hook,
		Ports: []cube.Port{
			{Name: "p0", Index: 0, Config: pcfg(`{"vlan":10}`)},
			{Name: "p1", Index: 1, Config: pcfg(`{"mode":"trunk","allowed_vlans":"10,20","native_vlan":30}`)},
			{Name: "p2", Index: 2, Config: pcfg(`{"mode":"access","vlan":20}`)},
			{Name: "p3", Index: 3, Config: pcfg(`{"vlan":10}`)},
		}}
}

var hooks = []struct {
	hook       datapath.Hook
	sent, drop uint32
}{
	{datapath.XDP, datapath.XDPRedirect, datapath.XDPDrop},
	{datapath.TC, datapath.TCActRedirect, datapath.TCActShot},
}

// floodHops gives every port its own (fake) interface so the TC flood loop
// visits them; clone_redirect to a missing interface fails harmlessly after
// the port's tx counter is bumped.
func floodHops(t *testing.T, r *nftest.Rig) {
	for _, p := range r.Model.Ports {
		if err := r.Prog.SetHop(uint32(p.Index), datapath.Hop{Kind: datapath.DstIface, Ifindex: uint32(100000 + p.Index)}); err != nil {
			t.Fatal(err)
		}
	}
}

func fdbRows(t *testing.T, r *nftest.Rig) []FDBRow {
	t.Helper()
	v, err := listFDB(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	return v.([]FDBRow)
}

func TestLearningStopsFlooding(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, flat(h.hook))
			// A → B: B unknown, flooded.
			res := r.Run("p0", frame(macA, macB, 0))
			if h.hook == datapath.XDP && (res.Verdict != datapath.XDPRedirect || res.Sent()) {
				t.Fatalf("unknown unicast: verdict %d port %d, want a devmap broadcast", res.Verdict, res.Port)
			}
			if h.hook == datapath.TC && res.Verdict != datapath.TCActShot {
				t.Fatalf("unknown unicast (TC flood): verdict %d", res.Verdict)
			}
			rows := fdbRows(t, r)
			if len(rows) != 1 || rows[0].MAC != macA || rows[0].Port != "p0" || rows[0].VLAN != 1 || rows[0].Type != "dynamic" {
				t.Fatalf("fdb after A→B: %+v", rows)
			}
			// B → A: A learned, unicast to p0; B learned on p1.
			res = r.Run("p1", frame(macB, macA, 0))
			if res.Verdict != h.sent || res.Port != 0 {
				t.Fatalf("B→A: verdict %d port %d, want p0", res.Verdict, res.Port)
			}
			// A → B now unicast to p1, frame unchanged.
			in := frame(macA, macB, 0)
			res = r.Run("p0", in)
			if res.Port != 1 || !bytes.Equal(res.Data[:len(in)], in) {
				t.Fatalf("A→B after learning: port %d", res.Port)
			}
			// A moves to p2.
			if res := r.Run("p2", frame(macA, "ff:ff:ff:ff:ff:ff", 0)); res.Sent() {
				t.Fatal("broadcast sent to one port")
			}
			if res := r.Run("p1", frame(macB, macA, 0)); res.Port != 2 {
				t.Fatalf("after move: port %d, want p2", res.Port)
			}
			// Destination behind the ingress port: filtered.
			if res := r.Run("p2", frame(macC, macA, 0)); res.Sent() || res.Verdict != h.drop {
				t.Fatalf("same-port destination: verdict %d port %d", res.Verdict, res.Port)
			}
			st, _ := r.Ctl.(*controller).status(r.Handle(), r.Model)
			s := st.(Status)
			if s.Moves != 1 || s.Filtered != 1 || s.Flooded != 2 || s.FDBEntries != 3 {
				t.Fatalf("status %+v", s)
			}
			// Flush: unicast floods again.
			if _, err := flushFDB(r.Handle(), r.Model, &FlushArgs{}); err != nil {
				t.Fatal(err)
			}
			if res := r.Run("p1", frame(macB, macA, 0)); res.Sent() {
				t.Fatal("still unicast after flush")
			}
		})
	}
}

func TestAging(t *testing.T) {
	c := flat(datapath.XDP)
	c.Config = json.RawMessage(`{"aging_time": 5}`)
	r := nftest.New(t, Type, c)
	r.Run("p0", frame(macA, macB, 0))
	if res := r.Run("p1", frame(macB, macA, 0)); res.Port != 0 {
		t.Fatal("not learned")
	}
	// Make A's entry 6 s old: the fast path ignores it (floods)...
	fdbM, _ := r.Prog.Map("br_fdb")
	k := kFDBKey{VLAN: 1}
	copy(k.MAC[:], nftest.MAC(macA))
	var v kFDBVal
	if err := fdbM.Lookup(k, &v); err != nil {
		t.Fatal(err)
	}
	v.Seen = ktime.CoarseNow() - 6e9
	fdbM.Put(k, v)
	if res := r.Run("p1", frame(macB, macA, 0)); res.Sent() {
		t.Fatal("aged entry still used")
	}
	// ...and the controller's scan removes it (B, fresh, stays).
	n, err := r.Ctl.(*controller).age(r.Handle(), 5e9)
	if err != nil || n != 1 {
		t.Fatalf("aged %d entries (%v), want 1", n, err)
	}
	if rows := fdbRows(t, r); len(rows) != 1 || rows[0].MAC != macB {
		t.Fatalf("fdb after aging: %+v", rows)
	}
}

func TestVLANTagUntag(t *testing.T) {
	r := nftest.New(t, Type, vlanned(datapath.XDP))
	// X behind the trunk in VLAN 10 (tagged); Y on access p0 (VLAN 10).
	r.Run("p1", frame(macB, "ff:ff:ff:ff:ff:ff", 10))
	r.Run("p0", frame(macA, "ff:ff:ff:ff:ff:ff", 0))

	// Access → trunk: tag 10 added.
	in := frame(macA, macB, 0)
	res := r.Run("p0", in)
	want := frame(macA, macB, 10)
	if res.Port != 1 || !bytes.Equal(res.Data[:len(want)], want) {
		t.Fatalf("access→trunk: port %d\n got % x\nwant % x", res.Port, res.Data[:len(want)], want)
	}
	// Trunk → access: tag removed.
	in = frame(macB, macA, 10)
	res = r.Run("p1", in)
	want = frame(macB, macA, 0)
	if res.Port != 0 || !bytes.Equal(res.Data[:len(want)], want) {
		t.Fatalf("trunk→access: port %d\n got % x\nwant % x", res.Port, res.Data[:len(want)], want)
	}
	// The flood copy is tagged for the devmap egress program.
	res = r.Run("p0", frame(macA, "ff:ff:ff:ff:ff:ff", 0))
	if res.Verdict != datapath.XDPRedirect || binary.BigEndian.Uint16(res.Data[12:]) != 0x8100 || binary.BigEndian.Uint16(res.Data[14:])&0xfff != 10 {
		t.Fatalf("flood copy: verdict %d header % x", res.Verdict, res.Data[:18])
	}
	// VLAN 20 frame for A (known only in VLAN 10): not sent to p0.
	if res := r.Run("p1", frame(macB, macA, 20)); res.Sent() {
		t.Fatalf("VLAN 20 frame unicast to port %d", res.Port)
	}
	// Untagged on the trunk = native VLAN 30; learned there.
	r.Run("p1", frame(macC, "ff:ff:ff:ff:ff:ff", 0))
	found := false
	for _, row := range fdbRows(t, r) {
		found = found || (row.MAC == macC && row.VLAN == 30 && row.Port == "p1")
	}
	if !found {
		t.Fatalf("native VLAN not learned: %+v", fdbRows(t, r))
	}
	// Dropped: VLAN 20 tag on an access port of VLAN 10, VLAN 99 on the trunk.
	r2 := nftest.New(t, Type, vlanned(datapath.XDP))
	if res := r2.Run("p0", frame(macA, macB, 20)); res.Verdict != datapath.XDPDrop {
		t.Fatalf("foreign tag on access port: verdict %d", res.Verdict)
	}
	if res := r2.Run("p1", frame(macA, macB, 99)); res.Verdict != datapath.XDPDrop {
		t.Fatalf("disallowed VLAN on trunk: verdict %d", res.Verdict)
	}
	st, _ := r2.Ctl.(*controller).status(r2.Handle(), r2.Model)
	if st.(Status).VLANDrops != 2 || len(fdbRows(t, r2)) != 0 {
		t.Fatalf("status %+v fdb %+v", st, fdbRows(t, r2))
	}
}

func TestFloodSetPerVLAN(t *testing.T) {
	// TC: the clone loop's per-port tx counters show the flood set exactly.
	r := nftest.New(t, Type, vlanned(datapath.TC))
	floodHops(t, r)
	f := frame(macA, "ff:ff:ff:ff:ff:ff", 0)
	r.Run("p0", f) // VLAN 10 from p0: p1 (tagged) and p3
	r.Run("p2", f) // VLAN 20 from p2: p1 only
	r.Run("p1", f) // native 30 from p1: nobody
	st := r.Stats()
	got := []uint64{st[0].TxPackets, st[1].TxPackets, st[2].TxPackets, st[3].TxPackets}
	if got[0] != 0 || got[1] != 2 || got[2] != 0 || got[3] != 1 {
		t.Fatalf("flood tx per port %v, want [0 2 0 1]", got)
	}
	// (TC tags in the skb's metadata: the counted length is the untagged one.)
	if st[1].TxBytes != 2*uint64(len(f)) || st[3].TxBytes != uint64(len(f)) {
		t.Fatalf("flood tx bytes: trunk %d access %d", st[1].TxBytes, st[3].TxBytes)
	}
}

func TestStaticEntries(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			c := vlanned(h.hook)
			c.Tables = map[string]map[string]json.RawMessage{"fdb": {
				macC + "/20": nftest.Entry(FDBEntry{MAC: macC, VLAN: 20, Port: "p1"}),
				macB + "/10": nftest.Entry(FDBEntry{MAC: macB, Port: "p3"}),
			}}
			r := nftest.New(t, Type, c)
			if res := r.Run("p2", frame(macA, macC, 0)); res.Port != 1 {
				t.Fatalf("static entry: port %d, want p1", res.Port)
			}
			if res := r.Run("p0", frame(macA, macB, 0)); res.Port != 3 {
				t.Fatalf("static entry with default VLAN: port %d, want p3", res.Port)
			}
			// Traffic from the static MAC elsewhere does not move it.
			r.Run("p0", frame(macB, "ff:ff:ff:ff:ff:ff", 0))
			if res := r.Run("p3", frame(macA, macB, 0)); res.Sent() || res.Verdict != h.drop {
				t.Fatalf("static entry moved: port %d", res.Port)
			}
			// Removing it from the table removes it from the kernel.
			delete(c.Tables["fdb"], macB+"/10")
			if err := r.Update(c); err != nil {
				t.Fatal(err)
			}
			for _, row := range fdbRows(t, r) {
				if row.MAC == macB && row.Type == "static" {
					t.Fatal("static entry left after removal")
				}
			}
		})
	}
}

func TestFDBFull(t *testing.T) {
	r := nftest.New(t, Type, flat(datapath.XDP))
	fdbM, _ := r.Prog.Map("br_fdb")
	keys := make([]kFDBKey, FDBCapacity)
	vals := make([]kFDBVal, FDBCapacity)
	now := ktime.CoarseNow()
	for i := range keys {
		keys[i] = kFDBKey{MAC: [6]byte{0x02, 0xee, 0, byte(i >> 16), byte(i >> 8), byte(i)}, VLAN: 1}
		vals[i] = kFDBVal{Port: 2, Seen: now}
	}
	if _, err := fdbM.BatchUpdate(keys, vals, nil); err != nil {
		t.Fatal(err)
	}
	// A new MAC cannot be learned: its frames still flood, replies to it flood.
	if res := r.Run("p0", frame(macA, macB, 0)); res.Verdict != datapath.XDPRedirect {
		t.Fatalf("verdict %d", res.Verdict)
	}
	if res := r.Run("p1", frame(macB, macA, 0)); res.Sent() {
		t.Fatal("unlearned MAC reached by unicast")
	}
	// Known MACs keep working.
	if res := r.Run("p0", frame(macA, "02:ee:00:00:00:05", 0)); res.Port != 2 {
		t.Fatalf("known MAC: port %d", res.Port)
	}
	st, _ := r.Ctl.(*controller).status(r.Handle(), r.Model)
	if s := st.(Status); s.LearnFull != 3 || s.FDBEntries != FDBCapacity {
		t.Fatalf("status %+v, want 3 learning failures (A twice, B once) and a full FDB", s)
	}
}

func TestValidation(t *testing.T) {
	cases := []struct {
		name string
		mod  func(c *cube.Cube)
		want string
	}{
		{"vlan range", func(c *cube.Cube) { c.Ports[0].Config = pcfg(`{"vlan":4095}`) }, "ports[p0].config.vlan: VLAN 4095 out of range 1..4094"},
		{"native range", func(c *cube.Cube) { c.Ports[1].Config = pcfg(`{"mode":"trunk","native_vlan":5000}`) }, "native_vlan: VLAN 5000 out of range"},
		{"allowed list", func(c *cube.Cube) { c.Ports[1].Config = pcfg(`{"mode":"trunk","allowed_vlans":"10,x"}`) }, "allowed_vlans: bad VLAN \"x\""},
		{"allowed range", func(c *cube.Cube) { c.Ports[1].Config = pcfg(`{"mode":"trunk","allowed_vlans":"10-0"}`) }, "VLAN 0 out of range"},
		{"backwards", func(c *cube.Cube) { c.Ports[1].Config = pcfg(`{"mode":"trunk","allowed_vlans":"30-20"}`) }, "runs backwards"},
		{"mode", func(c *cube.Cube) { c.Ports[1].Config = pcfg(`{"mode":"hybrid"}`) }, "mode: unknown mode \"hybrid\""},
		{"access with list", func(c *cube.Cube) { c.Ports[0].Config = pcfg(`{"allowed_vlans":"10"}`) }, "for trunk ports"},
		{"unknown field", func(c *cube.Cube) { c.Ports[0].Config = pcfg(`{"vlna":10}`) }, "vlna: unknown field"},
		{"aging", func(c *cube.Cube) { c.Config = pcfg(`{"aging_time":-1}`) }, "config.aging_time"},
		{"static bad mac", staticEntry(FDBEntry{MAC: "nope", Port: "p0"}), "mac: invalid MAC"},
		{"static multicast", staticEntry(FDBEntry{MAC: "01:00:5e:00:00:01", Port: "p0"}), "group address"},
		{"static port", staticEntry(FDBEntry{MAC: macA, Port: "p9"}), "port: cube br has no port"},
		{"static vlan not on port", staticEntry(FDBEntry{MAC: macA, VLAN: 20, Port: "p0"}), "port p0 does not carry VLAN 20"},
		{"static vlan range", staticEntry(FDBEntry{MAC: macA, VLAN: 9999, Port: "p1"}), "VLAN 9999 out of range"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := vlanned(datapath.XDP)
			tc.mod(c)
			topo := cube.NewTopology()
			topo.Put(c)
			err := topo.Validate(nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func staticEntry(e FDBEntry) func(*cube.Cube) {
	return func(c *cube.Cube) {
		c.Tables = map[string]map[string]json.RawMessage{"fdb": {"k": nftest.Entry(e)}}
	}
}

func TestRejectedUpdateLeavesStateAlone(t *testing.T) {
	r := nftest.New(t, Type, vlanned(datapath.XDP))
	r.Run("p3", frame(macB, "ff:ff:ff:ff:ff:ff", 0))
	bad := vlanned(datapath.XDP)
	bad.Ports[3].Config = pcfg(`{"vlan":0,"mode":"trunk","allowed_vlans":"1-5000"}`)
	if err := r.Update(bad); err == nil || !strings.Contains(err.Error(), "ports[p3].config.allowed_vlans: VLAN 5000 out of range 1..4094") {
		t.Fatalf("error %v", err)
	}
	if res := r.Run("p0", frame(macA, macB, 0)); res.Port != 3 {
		t.Fatalf("after a rejected update: port %d, want p3 as before", res.Port)
	}
	// A good update that moves p3 to VLAN 20 drops what it learned there.
	good := vlanned(datapath.XDP)
	good.Ports[3].Config = pcfg(`{"vlan":20}`)
	if err := r.Update(good); err != nil {
		t.Fatal(err)
	}
	for _, row := range fdbRows(t, r) {
		if row.MAC == macB && row.VLAN == 10 {
			t.Fatal("entry of a VLAN the port left is still there")
		}
	}
}
