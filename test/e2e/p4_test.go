package e2e

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// A P4 program runs as a cube: BMv2-style entries, real traffic, exact
// counters; a new program is swapped in place and traffic follows it.
func TestP4CubeWithRealTrafficAndProgramSwap(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	prog, _ := filepath.Abs("../../examples/p4/portfwd.p4")
	d.cli("cube", "add", "sw", "p4", "--program", prog)
	d.cli("port", "add", "sw", "p0", "--peer", ra, "--index", "0")
	d.cli("port", "add", "sw", "p1", "--peer", rb, "--index", "1")
	d.cli("p4", "table-add", "sw", "fwd", "forward", "0", "=>", "1")
	d.cli("p4", "table-add", "sw", "MyIngress.fwd", "MyIngress.forward", "1", "=>", "0")
	if out := d.cli("p4", "table-dump", "sw"); !strings.Contains(out, "standard_metadata.ingress_port=0") {
		t.Fatalf("table-dump:\n%s", out)
	}
	// Same entry by alias and full name: one entry, a conflict.
	if out, err := d.try("p4", "table-add", "sw", "MyIngress.fwd", "forward", "0", "=>", "1"); err == nil || !strings.Contains(out, "already has an entry") {
		t.Fatalf("duplicate entry: %v\n%s", err, out)
	}
	if out, err := d.try("p4", "table-add", "sw", "fwd", "forward", "0"); err == nil || !strings.Contains(out, "takes 1 parameters (port)") {
		t.Fatalf("missing parameter: %v\n%s", err, out)
	}
	if err := a.Ping(ctx(t, 20*time.Second), "198.18.0.2", 2); err != nil {
		t.Fatalf("ping through the P4 cube: %v", err)
	}
	d.cli("stats", "reset", "sw")
	if got := sendUDP(t, a, b, "198.18.0.2", 8001, 2000, 200); got != 2000 {
		t.Fatalf("%d of 2000 through the P4 cube", got)
	}
	st := d.portStats("sw")
	if st["sw"]["p0"].RxPackets != 2000 || st["sw"]["p1"].TxPackets != 2000 {
		t.Fatalf("counters %+v", st["sw"])
	}
	var ctrs []struct {
		Counter string `json:"counter"`
		Index   int    `json:"index"`
		Packets uint64 `json:"packets"`
	}
	d.json(&ctrs, "p4", "counter-read", "sw", "rx_counter")
	if len(ctrs) == 0 || ctrs[0].Index != 0 || ctrs[0].Packets < 2000 {
		t.Fatalf("P4 counter: %+v", ctrs)
	}

	// A program that drops everything replaces it in place...
	src, _ := os.ReadFile(prog)
	dropAll := strings.Replace(string(src), "fwd.apply();", "mark_to_drop(standard_metadata);", 1)
	dropFile := filepath.Join(t.TempDir(), "dropall.p4")
	os.WriteFile(dropFile, []byte(dropAll), 0o644)
	d.cli("cube", "set", "sw", "--program", dropFile)
	if got := sendUDP(t, a, b, "198.18.0.2", 8002, 200, 100); got != 0 {
		t.Fatalf("%d datagrams through a program that drops everything", got)
	}
	// ...and back: entries and ports were kept.
	d.cli("cube", "set", "sw", "--program", prog)
	if got := sendUDP(t, a, b, "198.18.0.2", 8003, 500, 100); got != 500 {
		t.Fatalf("after swapping back: %d of 500", got)
	}
	// A program that does not compile is refused with its position, and
	// nothing changes.
	bad := filepath.Join(t.TempDir(), "bad.p4")
	os.WriteFile(bad, []byte(strings.Replace(string(src), "fwd.apply();", "fwd.apply()", 1)), 0o644)
	before := d.cli("get", "cube", "sw", "-o", "json")
	if out, err := d.try("cube", "set", "sw", "--program", bad); err == nil || !strings.Contains(out, "bad.p4:") {
		t.Fatalf("bad program: %v\n%s", err, out)
	}
	if after := d.cli("get", "cube", "sw", "-o", "json"); after != before {
		t.Fatal("a refused program changed the cube")
	}
	if got := sendUDP(t, a, b, "198.18.0.2", 8004, 200, 100); got != 200 {
		t.Fatalf("after the refused program: %d of 200", got)
	}
}

// The shipped P4 l3 router between two subnets: ping and a verified TCP
// transfer through it.
func TestP4L3RouterRealTraffic(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	lab := netlab.NewT(t)
	a, _ := lab.Host("a")
	b, _ := lab.Host("b")
	ra, err := lab.Veth(a, "eth0", "a", "198.18.1.10/24")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := lab.Veth(b, "eth0", "b", "198.19.2.10/24")
	if err != nil {
		t.Fatal(err)
	}
	// The P4 program does not answer ARP: the hosts know their gateway's MAC.
	const macA, macB = "02:00:00:00:00:f1", "02:00:00:00:00:f2"
	must(t, a.SetNeigh("eth0", "198.18.1.1", macA))
	must(t, b.SetNeigh("eth0", "198.19.2.1", macB))
	must(t, a.AddRoute("default", "198.18.1.1"))
	must(t, b.AddRoute("default", "198.19.2.1"))
	ha, _ := a.MAC("eth0")
	hb, _ := b.MAC("eth0")

	prog, _ := filepath.Abs("../../examples/p4/l3router.p4")
	d.cli("cube", "add", "r1", "p4", "--program", prog)
	d.cli("port", "add", "r1", "pa", "--index", "1", "--peer", ra)
	d.cli("port", "add", "r1", "pb", "--index", "2", "--peer", rb)
	d.cli("p4", "table-add", "r1", "ipv4_lpm", "ipv4_forward", "198.18.1.0/24", "=>", ha.String(), "1")
	d.cli("p4", "table-add", "r1", "ipv4_lpm", "ipv4_forward", "198.19.2.0/24", "=>", hb.String(), "2")
	d.cli("p4", "table-add", "r1", "port_mac", "set_smac", "1", "=>", macA)
	d.cli("p4", "table-add", "r1", "port_mac", "set_smac", "2", "=>", macB)

	c := ctx(t, 60*time.Second)
	if err := a.Ping(c, "198.19.2.10", 3); err != nil {
		t.Fatalf("ping across the P4 router: %v", err)
	}
	if err := netlab.TCPTransfer(c, a, b, "198.19.2.10", 9001, 5<<20); err != nil {
		t.Fatalf("5 MB TCP across the P4 router: %v", err)
	}
	out, err := b.Exec(c, "ping", "-c", "1", "-W", "2", "198.18.1.10")
	if err != nil || !strings.Contains(string(out), "ttl=63") {
		t.Fatalf("reply should have crossed one router hop (ttl 63): %v\n%s", err, out)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The shipped P4 GTP-U UPF in a chain with built-in cubes: a gNB host sends
// real GTP-U (UDP 2152) carrying a UE's datagrams; the UPF decapsulates them
// to a data-network host. The data network answers the UE's address; the UPF
// encapsulates towards the gNB. portfwd cubes on both sides put the right
// MACs on (the P4 program does not), showing P4 and built-in cubes chained.
func TestP4UPFRealTraffic(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	lab := netlab.NewT(t)
	gnb, _ := lab.Host("gnb")
	dn, _ := lab.Host("dn")
	rg, err := lab.Veth(gnb, "eth0", "g", "198.18.0.2/24")
	must(t, err)
	rd, err := lab.Veth(dn, "eth0", "d", "198.19.0.5/24")
	must(t, err)
	const upfMAC, gwMAC = "02:00:00:00:00:01", "02:00:00:00:00:02"
	must(t, gnb.SetNeigh("eth0", "198.18.0.1", upfMAC))
	must(t, dn.SetNeigh("eth0", "198.19.0.1", gwMAC))
	must(t, dn.AddRoute("198.18.100.0/24", "198.19.0.1"))
	hg, _ := gnb.MAC("eth0")
	hd, _ := dn.MAC("eth0")

	prog, _ := filepath.Abs("../../examples/p4/upf.p4")
	d.cli("cube", "add", "upf", "p4", "--program", prog)
	d.cli("port", "add", "upf", "access", "--index", "0")
	d.cli("port", "add", "upf", "core", "--index", "1")
	for _, side := range []struct{ name, peer, upfPort, hostMAC string }{{"ga", rg, "access", hg.String()}, {"dc", rd, "core", hd.String()}} {
		d.cli("cube", "add", side.name, "portfwd")
		d.cli("port", "add", side.name, "host", "--peer", side.peer)
		d.cli("port", "add", side.name, "upf", "--peer", "upf:"+side.upfPort)
		d.cli("table", "add", side.name, "rules", "in_port=host", "out_port=upf")
		d.cli("table", "add", side.name, "rules", "in_port=upf", "out_port=host", "dst_mac="+side.hostMAC)
	}
	d.cli("p4", "table-add", "upf", "uplink", "decap", "0x1234")
	d.cli("p4", "table-add", "upf", "downlink", "encap", "198.18.100.1", "=>", "0x5678", "198.18.0.2", "198.18.0.1")

	// Uplink: the gNB tunnels the UE's datagrams.
	const n = 500
	uplink := listenCount(t, dn, 4000, n)
	var tx *net.UDPConn
	must(t, gnb.Do(func() error {
		var err error
		tx, err = net.DialUDP("udp", &net.UDPAddr{Port: 2152}, &net.UDPAddr{IP: net.ParseIP("198.18.0.1"), Port: 2152})
		return err
	}))
	defer tx.Close()
	for i := 0; i < n; i++ {
		inner := ueDatagram(t, "198.18.100.1", "198.19.0.5", 5000, 4000, fmt.Sprintf("up-%d", i))
		if _, err := tx.Write(gtpu(0x1234, inner)); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if got := <-uplink; got != n {
		t.Fatalf("uplink: the data network got %d of %d decapsulated datagrams", got, n)
	}

	// Downlink: the data network answers the UE; the gNB gets GTP-U.
	tx.SetReadDeadline(time.Now().Add(3 * time.Second))
	must(t, dn.Do(func() error {
		c, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.ParseIP("198.18.100.1"), Port: 5000})
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("down-0"))
		return err
	}))
	buf := make([]byte, 2048)
	m, _, err := tx.ReadFromUDP(buf)
	if err != nil {
		t.Fatalf("downlink: no GTP-U at the gNB: %v", err)
	}
	msg := buf[:m]
	if len(msg) < 8+28 || msg[1] != 0xff || binary.BigEndian.Uint32(msg[4:8]) != 0x5678 {
		t.Fatalf("downlink: not GTP-U with TEID 0x5678: % x", msg)
	}
	inner := gopacket.NewPacket(msg[8:], layers.LayerTypeIPv4, gopacket.Default)
	ip, _ := inner.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if ip == nil || ip.DstIP.String() != "198.18.100.1" || string(inner.ApplicationLayer().Payload()) != "down-0" {
		t.Fatalf("downlink: inner packet %v", inner)
	}
}

// gtpu wraps an inner IPv4 packet in a GTP-U G-PDU header.
func gtpu(teid uint32, inner []byte) []byte {
	h := make([]byte, 8, 8+len(inner))
	h[0] = 0x30 // version 1, protocol type GTP
	h[1] = 0xff // G-PDU
	binary.BigEndian.PutUint16(h[2:], uint16(len(inner)))
	binary.BigEndian.PutUint32(h[4:], teid)
	return append(h, inner...)
}

// ueDatagram is an IPv4/UDP packet (no Ethernet) with valid checksums.
func ueDatagram(t *testing.T, src, dst string, sport, dport int, payload string) []byte {
	ip := &layers.IPv4{Version: 4, TTL: 64, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	must(t, gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, udp, gopacket.Payload(payload)))
	return buf.Bytes()
}

// listenCount counts datagrams arriving on port inside h until n or 3 s of
// silence.
func listenCount(t *testing.T, h *netlab.Host, port, n int) <-chan int {
	var c *net.UDPConn
	must(t, h.Do(func() error {
		var err error
		c, err = net.ListenUDP("udp", &net.UDPAddr{Port: port})
		return err
	}))
	out := make(chan int, 1)
	go func() {
		defer c.Close()
		buf := make([]byte, 2048)
		got := 0
		for got < n {
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			if _, _, err := c.ReadFromUDP(buf); err != nil {
				break
			}
			got++
		}
		out <- got
	}()
	return out
}
