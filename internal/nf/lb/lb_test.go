package lb

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/google/gopacket/layers"
)

const (
	vip       = "198.18.9.100"
	client    = "198.18.1.2"
	clientMAC = "02:00:00:00:00:01"
	frontMAC  = "02:00:00:00:0f:00"
)

func u32(v uint32) *uint32 { return &v }

func backends(weights ...uint32) []Backend {
	var out []Backend
	for i, w := range weights {
		out = append(out, Backend{Name: fmt.Sprintf("be%d", i+1), Address: fmt.Sprintf("198.18.2.%d", 11+i),
			MAC: fmt.Sprintf("02:00:00:00:be:%02x", i+1), Port: fmt.Sprintf("b%d", i+1), Weight: u32(w)})
	}
	return out
}

func model(hook datapath.Hook, svcs ...Service) *cube.Cube {
	c := &cube.Cube{Name: "lb1", Type: "lb", Hook: hook,
		Ports: []cube.Port{{Name: "front", Index: 0, MAC: frontMAC, Addresses: []string{"198.18.1.1/24"}},
			{Name: "b1", Index: 1}, {Name: "b2", Index: 2}, {Name: "b3", Index: 3}, {Name: "b4", Index: 4}},
		Tables: map[string]map[string]json.RawMessage{"services": {}}}
	for _, s := range svcs {
		s := s
		if err := s.Validate(c); err != nil {
			panic(err)
		}
		c.Tables["services"][s.Key()] = nftest.Entry(s)
	}
	return c
}

func tcpFrame(src, dst string, sport, dport uint16, srcMAC, dstMAC string, syn bool) []byte {
	eth := &layers.Ethernet{SrcMAC: nftest.MAC(srcMAC), DstMAC: nftest.MAC(dstMAC), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), SYN: syn, ACK: !syn, Seq: 7, Window: 1024}
	return nftest.Serialize(eth, ip, tcp, nftestPayload("hello"))
}

func udpFrame(src, dst string, sport, dport uint16, srcMAC, dstMAC string) []byte {
	eth := &layers.Ethernet{SrcMAC: nftest.MAC(srcMAC), DstMAC: nftest.MAC(dstMAC), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	return nftest.Serialize(eth, ip, udp, nftestPayload("query"))
}

type nftestPayload []byte

func (p nftestPayload) SerializeTo(b gopacketBuffer, _ gopacketOpts) error {
	bytes, err := b.PrependBytes(len(p))
	if err != nil {
		return err
	}
	copy(bytes, p)
	return nil
}
func (p nftestPayload) LayerType() gopacketLayerType { return payloadType }

// csum16 is the Internet checksum of b.
func csum16(b []byte, sum uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

// checksumsOK verifies the IPv4 header and TCP/UDP checksums of a frame.
func checksumsOK(f []byte) bool {
	ip := f[14:]
	ihl := int(ip[0]&0xf) * 4
	if csum16(ip[:ihl], 0) != 0xffff {
		return false
	}
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	l4 := ip[ihl:tot]
	var ph uint32
	ph += uint32(binary.BigEndian.Uint16(ip[12:])) + uint32(binary.BigEndian.Uint16(ip[14:]))
	ph += uint32(binary.BigEndian.Uint16(ip[16:])) + uint32(binary.BigEndian.Uint16(ip[18:]))
	ph += uint32(ip[9]) + uint32(len(l4))
	if ip[9] == 17 && binary.BigEndian.Uint16(l4[6:]) == 0 {
		return true
	}
	return csum16(l4, ph) == 0xffff
}

var hooks = []struct {
	hook       datapath.Hook
	sent, drop uint32
}{
	{datapath.XDP, datapath.XDPRedirect, datapath.XDPDrop},
	{datapath.TC, datapath.TCActRedirect, datapath.TCActShot},
}

func TestDSRSpreadsByWeightWithAffinity(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, Service{VIP: vip, Port: 80, TableSize: 4099, Backends: backends(1, 2, 3, 4)}))
			per := map[int]int{}
			const flows = 4000
			for i := 0; i < flows; i++ {
				f := tcpFrame(client, vip, uint16(10000+i), 80, clientMAC, frontMAC, true)
				res := r.Run("front", f)
				if res.Verdict != h.sent || res.Port < 1 || res.Port > 4 {
					t.Fatalf("flow %d: verdict %d port %d", i, res.Verdict, res.Port)
				}
				be := res.Port
				// DSR: MACs rewritten, the IP packet untouched.
				if !bytes.Equal(res.Data[0:6], nftest.MAC(fmt.Sprintf("02:00:00:00:be:%02x", be))) ||
					!bytes.Equal(res.Data[6:12], portMAC(r.Model, r.Model.PortByIndex(be))) || !bytes.Equal(res.Data[12:], f[12:]) {
					t.Fatalf("flow %d: frame % x", i, res.Data[:34])
				}
				per[be]++
				// Affinity: the flow's next packets (ACKs) go to the same backend.
				if i%10 == 0 {
					if again := r.Run("front", tcpFrame(client, vip, uint16(10000+i), 80, clientMAC, frontMAC, false)); again.Port != be {
						t.Fatalf("flow %d moved from backend %d to %d", i, be, again.Port)
					}
				}
			}
			for be := 1; be <= 4; be++ {
				want := float64(flows) * float64(be) / 10
				if got := float64(per[be]); got < want*0.9 || got > want*1.1 {
					t.Errorf("backend %d (weight %d): %d flows, want %.0f ±10%%", be, be, per[be], want)
				}
			}
			t.Logf("flows per backend (weights 1:2:3:4): %v", per)
			svcs, err := Services(r.Handle(), r.Model)
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range svcs[0].Backends {
				if b.Flows != uint64(per[i+1]) || b.Packets != uint64(per[i+1]+per[i+1]/10+1) && b.Packets < b.Flows {
					t.Errorf("backend %s: flows %d packets %d, want %d flows", b.Name, b.Flows, b.Packets, per[i+1])
				}
				if want := float64(i+1) / 10; b.TableShare < want-0.001 || b.TableShare > want+0.001 {
					t.Errorf("backend %s table share %.4f, want %.1f", b.Name, b.TableShare, want)
				}
			}
		})
	}
}

func TestNATRewritesAndTranslatesReplies(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			bes := backends(1)
			bes[0].TargetPort = 8080
			r := nftest.New(t, Type, model(h.hook,
				Service{VIP: vip, Port: 80, Mode: "nat", TableSize: 251, Backends: bes},
				Service{VIP: vip, Protocol: "udp", Port: 53, Mode: "nat", TableSize: 251, Backends: backends(1)}))
			for _, tc := range []struct {
				name     string
				req      []byte
				dport    uint16
				reply    []byte
				replyDst uint16
			}{
				{"tcp", tcpFrame(client, vip, 40000, 80, clientMAC, frontMAC, true), 8080,
					tcpFrame("198.18.2.11", client, 8080, 40000, "02:00:00:00:be:01", "02:00:00:00:00:99", false), 80},
				{"udp", udpFrame(client, vip, 40001, 53, clientMAC, frontMAC), 53,
					udpFrame("198.18.2.11", client, 53, 40001, "02:00:00:00:be:01", "02:00:00:00:00:99"), 53},
			} {
				res := r.Run("front", tc.req)
				if res.Verdict != h.sent || res.Port != 1 {
					t.Fatalf("%s request: verdict %d port %d", tc.name, res.Verdict, res.Port)
				}
				d := res.Data
				if !net.IP(d[30:34]).Equal(net.ParseIP("198.18.2.11")) || binary.BigEndian.Uint16(d[36:]) != tc.dport ||
					!net.IP(d[26:30]).Equal(net.ParseIP(client)) || !bytes.Equal(d[0:6], nftest.MAC("02:00:00:00:be:01")) {
					t.Fatalf("%s request not translated: % x", tc.name, d[:40])
				}
				if !checksumsOK(d) {
					t.Fatalf("%s request: bad checksums", tc.name)
				}
				// The backend's reply comes back on b1 and leaves by front as the VIP.
				res = r.Run("b1", tc.reply)
				if res.Verdict != h.sent || res.Port != 0 {
					t.Fatalf("%s reply: verdict %d port %d", tc.name, res.Verdict, res.Port)
				}
				d = res.Data
				if !net.IP(d[26:30]).Equal(net.ParseIP(vip)) || binary.BigEndian.Uint16(d[34:]) != tc.replyDst ||
					!bytes.Equal(d[0:6], nftest.MAC(clientMAC)) || !bytes.Equal(d[6:12], nftest.MAC(frontMAC)) {
					t.Fatalf("%s reply not translated: % x", tc.name, d[:40])
				}
				if !checksumsOK(d) {
					t.Fatalf("%s reply: bad checksums", tc.name)
				}
			}
			// A packet from a backend that belongs to no flow is unknown: dropped.
			if res := r.Run("b1", tcpFrame("198.18.2.11", client, 8080, 40999, "02:00:00:00:be:01", frontMAC, false)); res.Verdict != h.drop {
				t.Errorf("stray backend packet: verdict %d", res.Verdict)
			}
		})
	}
}

func TestARPForVIPAndPortAddress(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, Service{VIP: vip, Port: 80, TableSize: 251, Backends: backends(1)}))
	for _, target := range []string{vip, "198.18.1.1"} {
		res := r.Run("front", nftest.ARPRequest(clientMAC, client, target))
		if res.Verdict != datapath.XDPRedirect || res.Port != 0 {
			t.Fatalf("ARP for %s: verdict %d port %d", target, res.Verdict, res.Port)
		}
		d := res.Data
		if !bytes.Equal(d[0:6], nftest.MAC(clientMAC)) || !bytes.Equal(d[6:12], nftest.MAC(frontMAC)) ||
			binary.BigEndian.Uint16(d[20:]) != 2 || !bytes.Equal(d[22:28], nftest.MAC(frontMAC)) ||
			!net.IP(d[28:32]).Equal(net.ParseIP(target)) || !bytes.Equal(d[32:38], nftest.MAC(clientMAC)) ||
			!net.IP(d[38:42]).Equal(net.ParseIP(client)) {
			t.Fatalf("ARP reply for %s: % x", target, d[:42])
		}
	}
	if res := r.Run("front", nftest.ARPRequest(clientMAC, client, "198.18.1.77")); res.Verdict != datapath.XDPDrop {
		t.Errorf("ARP for a foreign address: verdict %d", res.Verdict)
	}
	// Port b1 has no address: ARP for 198.18.1.1 there is not ours.
	if res := r.Run("b1", nftest.ARPRequest(clientMAC, client, "198.18.1.1")); res.Verdict != datapath.XDPDrop {
		t.Errorf("ARP on another port: verdict %d", res.Verdict)
	}
	// Unknown traffic: drop by default, pass when configured.
	f := nftest.UDP4(client, "198.18.1.1", 1, 2, nil)
	if res := r.Run("front", f); res.Verdict != datapath.XDPDrop {
		t.Errorf("unknown traffic: verdict %d", res.Verdict)
	}
	m := model(datapath.XDP, Service{VIP: vip, Port: 80, TableSize: 251, Backends: backends(1)})
	m.Config = json.RawMessage(`{"unknown":"pass"}`)
	if err := r.Update(m); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("front", f); res.Verdict != datapath.XDPPass {
		t.Errorf("unknown traffic with pass: verdict %d", res.Verdict)
	}
	c, _ := lbCounters.Read(r.Handle())
	t.Logf("counters %+v", c)
}

// flowsOf sends one SYN per flow and returns the backend port of each.
func flowsOf(r *nftest.Rig, n int, syn bool) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = r.Run("front", tcpFrame(client, vip, uint16(20000+i), 80, clientMAC, frontMAC, syn)).Port
	}
	return out
}

func TestDrainDisableRemoveMoveOnlyTheirFlows(t *testing.T) {
	bes := backends(1, 1, 1, 1)
	r := nftest.New(t, Type, model(datapath.XDP, Service{VIP: vip, Port: 80, Backends: bes}))
	const n = 2000
	before := flowsOf(r, n, true)

	update := func(mut func(b []Backend) []Backend) {
		t.Helper()
		nb := mut(append([]Backend{}, bes...))
		if err := r.Update(model(datapath.XDP, Service{VIP: vip, Port: 80, Backends: nb})); err != nil {
			t.Fatal(err)
		}
	}
	// Drain be2: its flows stay, no new flow goes to it.
	update(func(b []Backend) []Backend { b[1].State = "draining"; return b })
	if after := flowsOf(r, n, false); !equal(after, before) {
		t.Fatal("draining moved established flows")
	}
	for i := 0; i < 500; i++ {
		if p := r.Run("front", tcpFrame("198.18.1.3", vip, uint16(i), 80, clientMAC, frontMAC, true)).Port; p == 2 {
			t.Fatal("a new flow went to the draining backend")
		}
	}
	// Disable be2: its flows move, nobody else's.
	update(func(b []Backend) []Backend { b[1].State = "disabled"; return b })
	after := flowsOf(r, n, false)
	movedOwn, movedOther := 0, 0
	for i := range before {
		switch {
		case before[i] == 2 && after[i] != 2:
			movedOwn++
		case before[i] != 2 && after[i] != before[i]:
			movedOther++
		}
		if after[i] == 2 {
			t.Fatal("flow still on the disabled backend")
		}
	}
	if movedOwn == 0 || movedOther != 0 {
		t.Errorf("disable: moved %d own flows, %d others", movedOwn, movedOther)
	}
	// Remove be3: same, its flows move, the rest stay.
	before = after
	update(func(b []Backend) []Backend { b[1].State = "disabled"; return append(b[:2], b[3:]...) })
	after = flowsOf(r, n, false)
	movedOwn, movedOther = 0, 0
	for i := range before {
		switch {
		case before[i] == 3 && after[i] != 3:
			movedOwn++
		case before[i] != 3 && after[i] != before[i]:
			movedOther++
		}
	}
	t.Logf("remove be3: %d of its flows moved, %d of the others", movedOwn, movedOther)
	if movedOwn == 0 || movedOther != 0 {
		t.Errorf("remove: moved %d own flows, %d others", movedOwn, movedOther)
	}
	// Without the connection table (flushed), Maglev alone keeps the others
	// in place too, up to a small fraction.
	if _, err := flushConns(r.Handle(), r.Model, nil); err != nil {
		t.Fatal(err)
	}
	again := flowsOf(r, n, true)
	moved := 0
	for i := range after {
		if again[i] != after[i] {
			moved++
		}
	}
	t.Logf("after flushing connections, %d of %d flows land elsewhere", moved, n)
	if moved > n/50 {
		t.Errorf("Maglev placement unstable: %d of %d flows moved", moved, n)
	}
	// Add be2 back active: new table, established flows unchanged.
	update(func(b []Backend) []Backend { return append(b[:2], b[3:]...) })
	if a := flowsOf(r, n, false); !equal(a, again) {
		t.Error("adding a backend moved established flows")
	}
}

func equal(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBackendsTable(t *testing.T) {
	m := model(datapath.XDP, Service{VIP: vip, Port: 80, TableSize: 251, Backends: backends(1)})
	r := nftest.New(t, Type, m)
	b := backends(1, 1)[1]
	b.Service = vip + ":tcp:80"
	m2 := model(datapath.XDP, Service{VIP: vip, Port: 80, TableSize: 251, Backends: backends(1)})
	m2.Tables["backends"] = map[string]json.RawMessage{b.Service + "/be2": nftest.Entry(b)}
	if err := r.Update(m2); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range flowsOf(r, 200, true) {
		seen[p] = true
	}
	if !seen[1] || !seen[2] || len(seen) != 2 {
		t.Fatalf("backends used: %v", seen)
	}
	svcs, _ := Services(r.Handle(), r.Model)
	if len(svcs[0].Backends) != 2 || svcs[0].Backends[1].Name != "be2" {
		t.Fatalf("services view %+v", svcs)
	}
	conns, _ := listConns(r.Handle(), r.Model)
	if n := len(conns.([]Connection)); n != 200 {
		t.Errorf("%d connections listed", n)
	}
}

func TestValidationErrors(t *testing.T) {
	front := []cube.Port{{Name: "front", Index: 0}, {Name: "b1", Index: 1}}
	c := &cube.Cube{Name: "lb1", Ports: front, Tables: map[string]map[string]json.RawMessage{}}
	good := `"address":"198.18.2.11","mac":"02:00:00:00:be:01","port":"b1"`
	cases := []struct {
		entry string
		want  string
	}{
		{`{"vip":"198.18.9.100","port":80}`, "tables.services.backends: service 198.18.9.100:tcp:80 has no backends"},
		{`{"vip":"198.18.9.300","port":80}`, `tables.services.vip: invalid address "198.18.9.300"`},
		{`{"vip":"2001:db8::1","port":80,"backends":[{"name":"a","address":"198.18.2.3","mac":"02:00:00:00:be:01","port":"b1"}]}`, "backends[0].address: 198.18.2.3 and the service's VIP 2001:db8::1 are of different address families"},
		{`{"vip":"fe80::1","port":80}`, "vip: fe80::1 cannot be a service address"},
		{`{"vip":"198.18.9.100"}`, "tables.services.port: required"},
		{`{"vip":"198.18.9.100","port":80,"protocol":"sctp"}`, `protocol: unknown protocol "sctp"`},
		{`{"vip":"198.18.9.100","port":80,"mode":"gre"}`, `mode: unknown mode "gre" (want dsr, tunnel or nat)`},
		{`{"vip":"198.18.9.100","port":80,"table_size":65536,"backends":[{"name":"a",` + good + `}]}`, "table_size: 65536: want a prime"},
		{`{"vip":"198.18.9.100","port":80,"backends":[{"name":"a","weight":0,` + good + `}]}`, "backends[0].weight: 0: want 1..10000"},
		{`{"vip":"198.18.9.100","port":80,"backends":[{"name":"a","address":"198.18.2.300","mac":"02:00:00:00:be:01","port":"b1"}]}`, `backends[0].address: invalid address "198.18.2.300"`},
		{`{"vip":"198.18.9.100","port":80,"backends":[{"name":"a","address":"198.18.2.1","mac":"zz","port":"b1"}]}`, `backends[0].mac: invalid MAC`},
		{`{"vip":"198.18.9.100","port":80,"backends":[{"name":"a","address":"198.18.2.1","mac":"02:00:00:00:be:01","port":"b9"}]}`, `backends[0].port: cube lb1 has no port "b9"`},
		{`{"vip":"198.18.9.100","port":80,"backends":[{"name":"a",` + good + `},{"name":"b",` + good + `}]}`, `backends[1].address: 198.18.2.11 is already backend a`},
		{`{"vip":"198.18.9.100","port":80,"backends":[{"name":"a",` + good + `,"target_port":8080}]}`, `target_port: only NAT services`},
		{`{"vip":"198.18.9.100","port":80,"backends":[{"name":"a",` + good + `,"state":"off"}]}`, `state: unknown state "off"`},
		{`{"vip":"198.18.9.100","port":80,"table_size":7,"backends":[{"name":"a",` + good + `}]}`, `table_size: 7 is too small for 1 backends`},
	}
	for _, tc := range cases {
		_, _, err := servicesTable.DecodeEntry(c, json.RawMessage(tc.entry))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n error %v\n want %q", tc.entry, err, tc.want)
		}
	}
	_, _, err := backendsTable.DecodeEntry(c, json.RawMessage(`{"service":"198.18.9.100:tcp:80","name":"x",`+good+`}`))
	if err == nil || !strings.Contains(err.Error(), "tables.backends.service: cube lb1 has no service 198.18.9.100:tcp:80") {
		t.Errorf("backend of a missing service: %v", err)
	}
	_, _, err = backendsTable.DecodeEntry(c, json.RawMessage(`{"service":"198.18.9.100:80","name":"x",`+good+`}`))
	if err == nil || !strings.Contains(err.Error(), "tables.backends.service: invalid service") {
		t.Errorf("malformed service key: %v", err)
	}
}

// TestBadInputLeavesStateUnchanged: rejected changes through a real engine
// leave the desired state as it was, and the last backend cannot be removed.
func TestBadInputLeavesStateUnchanged(t *testing.T) {
	e := nftest.Engine(t)
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "lb1", Type: "lb", Hook: datapath.XDP,
			Ports: []cube.Port{{Name: "front", Index: 0}, {Name: "b1", Index: 1}}}); err != nil {
			return err
		}
		// A service is created with a backend; more come through the backends table.
		if _, err := tp.PutEntry("lb1", "services", json.RawMessage(`{"vip":"198.18.9.100","port":80,"table_size":251,
			"backends":[{"name":"z","address":"198.18.2.12","mac":"02:00:00:00:be:02","port":"b1"}]}`)); err != nil {
			return err
		}
		_, err := tp.PutEntry("lb1", "backends", json.RawMessage(`{"service":"198.18.9.100:tcp:80","name":"a","address":"198.18.2.11","mac":"02:00:00:00:be:01","port":"b1"}`))
		return err
	})
	// The inline backend can go: "a" remains.
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		_, err := tp.PutEntry("lb1", "services", json.RawMessage(`{"vip":"198.18.9.100","port":80,"table_size":251}`))
		return err
	})
	before, _ := json.Marshal(e.Topology())
	for _, fn := range []func(tp *cube.Topology) error{
		// The last backend cannot be removed.
		func(tp *cube.Topology) error { return tp.DeleteEntry("lb1", "backends", "198.18.9.100:tcp:80/a") },
		func(tp *cube.Topology) error {
			_, err := tp.PutEntry("lb1", "services", json.RawMessage(`{"vip":"198.18.9.101","port":80}`))
			return err
		},
		func(tp *cube.Topology) error {
			_, err := tp.PutEntry("lb1", "backends", json.RawMessage(`{"service":"198.18.9.100:tcp:80","name":"a","address":"198.18.2.11","mac":"02:00:00:00:be:01","port":"b1","weight":0}`))
			return err
		},
	} {
		err := e.Update(fn)
		if err == nil {
			t.Fatal("bad change accepted")
		}
		t.Logf("rejected: %v", err)
	}
	after, _ := json.Marshal(e.Topology())
	if !bytes.Equal(before, after) {
		t.Fatalf("state changed:\n%s\n%s", before, after)
	}
	v, err := e.View(tenant.Admin, "lb1", "services")
	if err != nil {
		t.Fatal(err)
	}
	if s := v.([]ServiceStatus); len(s) != 1 || len(s[0].Backends) != 1 || s[0].Backends[0].TableShare != 1 {
		t.Fatalf("services %+v", s)
	}
}
