package router

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// modelChecked is model6 with p0's source check on: p0 accepts its
// connected subnets, the routes out of it (198.19.0.0/17,
// 2001:db8:100::/48) and its allowed sources; p1 checks nothing.
func modelChecked(hook datapath.Hook) *cube.Cube {
	c := model6(hook, []Route{{Prefix: "198.19.0.0/17", NextHop: "198.18.0.20"}, {Prefix: "2001:db8:100::/48", NextHop: "2001:db8::20"}},
		[]Neighbor{{IP: "198.18.1.30", MAC: macN2}, {IP: "2001:db8:1::30", MAC: macN1}, {IP: "198.18.0.30", MAC: macN2}})
	c.Ports[0].Config = json.RawMessage(`{"source_check": "on", "allowed_sources": ["198.19.128.0/24", "2001:db8:200::/48"]}`)
	return c
}

func sourceRow(t *testing.T, r *nftest.Rig, port string) SourceCheck {
	t.Helper()
	v, err := r.Ctl.(*controller).listSources(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range v.([]SourceCheck) {
		if s.Port == port {
			return s
		}
	}
	t.Fatalf("no source_check row for %s", port)
	return SourceCheck{}
}

// TestSourceCheck: a checked port forwards packets from its own sources
// (connected subnet, routes out of it, allowed sources) of both families,
// drops and counts any other source, answers link-local neighbour
// discovery and echo as before; an unchecked port takes any source. Routes
// added and removed one by one move the allowed sources with them.
func TestSourceCheck(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, modelChecked(h.hook))
			for _, src := range []string{"198.18.0.10", "198.19.5.5", "198.19.128.7"} {
				if res := r.Run("p0", udpTo(macP0, src, "198.18.1.30", 64)); res.Verdict != h.sent || res.Port != 1 {
					t.Errorf("legit source %s: verdict %d port %d, want forwarded", src, res.Verdict, res.Port)
				}
			}
			for _, src := range []string{"2001:db8::10", "2001:db8:100:7::5", "2001:db8:200::1"} {
				if res := r.Run("p0", udp6To(macP0, src, "2001:db8:1::30", 64)); res.Verdict != h.sent || res.Port != 1 {
					t.Errorf("legit source %s: verdict %d port %d, want forwarded", src, res.Verdict, res.Port)
				}
			}
			spoofed := []struct{ src, dst string }{
				{"198.18.1.99", "198.18.1.30"},       // p1's subnet
				{"198.19.200.1", "198.18.1.30"},      // routed, but not out of p0
				{"198.18.0.1", "198.18.1.30"},        // the router's own address
				{"198.18.1.99", "198.18.0.1"},        // an echo to the router from a spoofed source
				{"2001:db8:1::99", "2001:db8:1::30"}, // p1's subnet
				{"2001:db8:300::1", "2001:db8:1::30"},
			}
			for _, s := range spoofed {
				var f []byte
				if strings.Contains(s.src, ":") {
					f = udp6To(macP0, s.src, s.dst, 64)
				} else {
					f = udpTo(macP0, s.src, s.dst, 64)
				}
				if res := r.Run("p0", f); res.Verdict != h.drop {
					t.Errorf("spoofed %s → %s: verdict %d, want drop", s.src, s.dst, res.Verdict)
				}
			}
			// Neighbour discovery (multicast) and link-local echo are not checked.
			if res := r.Run("p0", ns6("2001:db8::1", "ff02::1:ff00:1", "33:33:ff:00:00:01")); res.Verdict != h.sent {
				t.Errorf("NS on a checked port: verdict %d", res.Verdict)
			}
			ll := linkLocal(nftest.MAC(macP0)).String()
			echo := icmp6To(macP0, "fe80::10", ll, 64,
				&layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)},
				&layers.ICMPv6Echo{Identifier: 7, SeqNumber: 1}, gopacket.Payload("ping"))
			if res := r.Run("p0", echo); res.Verdict != h.sent || res.Port != 0 {
				t.Errorf("link-local echo on a checked port: verdict %d", res.Verdict)
			}
			row := sourceRow(t, r, "p0")
			want := "198.18.0.0/24 198.19.0.0/17 198.19.128.0/24 2001:db8:100::/48 2001:db8:200::/48 2001:db8::/64"
			if !row.Check || row.Dropped != uint64(len(spoofed)) || strings.Join(row.Allowed, " ") != want {
				t.Fatalf("p0's row %+v, want check on, %d dropped, allowed %s", row, len(spoofed), want)
			}
			// p1 is unchecked: any source.
			if res := r.Run("p1", udpTo(macP1, "198.19.250.1", "198.18.0.30", 64)); res.Verdict != h.sent || res.Port != 0 {
				t.Errorf("unchecked p1: verdict %d port %d", res.Verdict, res.Port)
			}
			if row := sourceRow(t, r, "p1"); row.Check || row.Dropped != 0 || len(row.Allowed) != 0 {
				t.Errorf("p1's row %+v", row)
			}
			// One route at a time.
			ew := r.Ctl.(cube.EntryWriter)
			for _, rt := range []Route{{Prefix: "198.18.64.0/24", NextHop: "198.18.0.20"}, {Prefix: "2001:db8:400::/48", Port: "p0"}} {
				src := map[bool]string{true: "198.18.64.9", false: "2001:db8:400::9"}[strings.Contains(rt.Prefix, ".")]
				var f []byte
				if strings.Contains(rt.Prefix, ".") {
					f = udpTo(macP0, src, "198.18.1.30", 64)
				} else {
					f = udp6To(macP0, src, "2001:db8:1::30", 64)
				}
				if res := r.Run("p0", f); res.Verdict != h.drop {
					t.Fatalf("%s before its route: verdict %d", src, res.Verdict)
				}
				if err := ew.PutEntry(r.Handle(), r.Model, "routes", &rt); err != nil {
					t.Fatal(err)
				}
				if res := r.Run("p0", f); res.Verdict != h.sent {
					t.Fatalf("%s with its route: verdict %d", src, res.Verdict)
				}
				if err := ew.DeleteEntry(r.Handle(), r.Model, "routes", &rt); err != nil {
					t.Fatal(err)
				}
				if res := r.Run("p0", f); res.Verdict != h.drop {
					t.Fatalf("%s after its route went: verdict %d", src, res.Verdict)
				}
			}
			// A route moved to another port takes its sources with it.
			moved := udpTo(macP0, "198.18.64.9", "198.18.1.30", 64)
			for _, rt := range []Route{{Prefix: "198.18.64.0/24", NextHop: "198.18.0.20"}, {Prefix: "198.18.64.0/24", NextHop: "198.18.1.20"}} {
				if err := ew.PutEntry(r.Handle(), r.Model, "routes", &rt); err != nil {
					t.Fatal(err)
				}
			}
			if res := r.Run("p0", moved); res.Verdict != h.drop {
				t.Fatalf("source of a route moved to p1 still accepted on p0: verdict %d", res.Verdict)
			}
			// Turned off: every source again.
			m := modelChecked(h.hook)
			m.Ports[0].Config = json.RawMessage(`{"source_check": "off"}`)
			if err := r.Update(m); err != nil {
				t.Fatal(err)
			}
			if res := r.Run("p0", udpTo(macP0, "198.18.1.99", "198.18.1.30", 64)); res.Verdict != h.sent {
				t.Fatalf("check off: verdict %d", res.Verdict)
			}
		})
	}
}

// TestPlugTurnsSourceCheckOn: a workload's port gets the check with its
// own /32 and /128 as the only sources (another workload's address is
// dropped), unless its operator turned the check off before.
func TestPlugTurnsSourceCheckOn(t *testing.T) {
	c := model6(datapath.XDP, nil, []Neighbor{{IP: "198.18.1.30", MAC: macN2}})
	c.Ports = append(c.Ports, cube.Port{Name: "pod1", Index: 3}, cube.Port{Name: "pod2", Index: 4, Config: json.RawMessage(`{"source_check":"off"}`)})
	for _, p := range []struct {
		port string
		addr []netip.Prefix
	}{{"pod1", []netip.Prefix{netip.MustParsePrefix("198.19.9.5/24"), netip.MustParsePrefix("2001:db8:9::5/64")}},
		{"pod2", []netip.Prefix{netip.MustParsePrefix("198.19.9.6/24")}}} {
		if _, err := plug(c, p.port, p.addr, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := string(c.Port("pod1").Config); got != `{"source_check":"on"}` {
		t.Fatalf("pod1's config %s", got)
	}
	if got := string(c.Port("pod2").Config); got != `{"source_check":"off"}` {
		t.Fatalf("pod2's config %s, want off kept", got)
	}
	r := nftest.New(t, Type, c)
	mac := PortMAC(c, c.Port("pod1")).String()
	if res := r.Run("pod1", udpTo(mac, "198.19.9.5", "198.18.1.30", 64)); res.Verdict != datapath.XDPRedirect {
		t.Fatalf("pod1 from its own address: verdict %d", res.Verdict)
	}
	if res := r.Run("pod1", udpTo(mac, "198.19.9.6", "198.18.1.30", 64)); res.Verdict != datapath.XDPDrop {
		t.Fatalf("pod1 as pod2: verdict %d, want drop", res.Verdict)
	}
	if row := sourceRow(t, r, "pod1"); strings.Join(row.Allowed, " ") != "198.19.9.5/32 2001:db8:9::5/128" || row.Dropped != 1 {
		t.Fatalf("pod1's row %+v", row)
	}
	mac2 := PortMAC(c, c.Port("pod2")).String()
	if res := r.Run("pod2", udpTo(mac2, "198.19.9.5", "198.18.1.30", 64)); res.Verdict != datapath.XDPRedirect {
		t.Fatalf("pod2, check off: verdict %d", res.Verdict)
	}
}

func TestSourceCheckValidation(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{"allowed_sources": ["198.19.0.0/16"]}`, "ports[p0].config.allowed_sources: allowed sources apply to a port whose source_check is on"},
		{`{"source_check": "on", "allowed_sources": ["198.19.0.0/33"]}`, "ports[p0].config.allowed_sources[0]: invalid prefix"},
		{`{"source_check": "on", "allowed_sources": ["198.19.1.1/16"]}`, "did you mean 198.19.0.0/16"},
		{`{"source_check": "on", "allowed_sources": ["::ffff:198.19.0.0/112"]}`, "IPv4-mapped"},
		{`{"source_check": "strict"}`, "source_check"},
		{`{"source_check": "on", "extra": 1}`, "extra"},
	} {
		c := model(datapath.XDP, nil, nil)
		c.Ports[0].Config = json.RawMessage(tc.config)
		topo := cube.NewTopology()
		topo.Put(c)
		if err := topo.Validate(nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.config, err, tc.want)
		}
	}
	// A refused update leaves the check as it was.
	r := nftest.New(t, Type, modelChecked(datapath.XDP))
	bad := modelChecked(datapath.XDP)
	bad.Ports[0].Config = json.RawMessage(`{"source_check": "off", "allowed_sources": ["198.19.0.0/16"]}`)
	if err := r.Update(bad); err == nil {
		t.Fatal("bad port config accepted")
	}
	if res := r.Run("p0", udpTo(macP0, "198.18.1.99", "198.18.1.30", 64)); res.Verdict != datapath.XDPDrop {
		t.Fatalf("check lost by a refused update: verdict %d", res.Verdict)
	}
}
