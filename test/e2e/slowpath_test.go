package e2e

import (
	"encoding/hex"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// Punted packets reach the NF's Go handler with their metadata; the daemon
// injects frames into a cube port (as if received) and out of a port.
func TestSlowPathPuntAndInject(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) {
			d := startDaemon(t)
			_, a, b, ra, rb := twoHosts(t)
			d.cli("cube", "add", "c1", "portfwd", "--hook", hook)
			d.cli("port", "add", "c1", "p0", "--peer", ra)
			d.cli("port", "add", "c1", "p1", "--peer", rb)
			d.cli("table", "add", "c1", "rules", "in_port=p0", "action=punt")
			d.cli("table", "add", "c1", "rules", "in_port=p1", "out_port=p0")

			// A→B is punted: nothing arrives, the handler sees every datagram.
			if got := sendUDP(t, a, b, "198.18.0.2", 7100, 20, 100); got != 0 {
				t.Fatalf("%d punted datagrams were forwarded", got)
			}
			var punted []struct {
				InPort int    `json:"in_port"`
				Length int    `json:"length"`
				Head   string `json:"head"`
			}
			poll(func() bool { // the daemon reads punted frames from a ring
				d.json(&punted, "view", "c1", "punted")
				return len(punted) >= 20
			})
			if len(punted) != 20 || punted[0].InPort != 0 || punted[0].Length != 14+20+8+100 {
				t.Fatalf("slow path saw %d frames (want 20 from port 0 of 142 bytes): %+v", len(punted), punted)
			}
			st := d.portStats("c1")
			if st["c1"]["p0"].RxPackets != 20 {
				t.Fatalf("counters: %+v", st["c1"]["p0"])
			}

			// Injected as if received on p1: forwarded by the rule p1→p0 to A.
			// Sent out of p1: delivered straight to B.
			ma, _ := a.MAC("eth0")
			mb, _ := b.MAC("eth0")
			toA := udpFrame(t, mb, ma, "198.18.0.2", "198.18.0.1", 7200, "via-p1-rule")
			toB := udpFrame(t, ma, mb, "198.18.0.1", "198.18.0.2", 7201, "out-of-p1")
			gotA := listenOnce(t, a, 7200)
			gotB := listenOnce(t, b, 7201)
			d.cli("inject", "c1", "p1", hex.EncodeToString(toA))
			d.cli("inject", "c1", "p1", hex.EncodeToString(toB), "--out")
			if msg := <-gotA; msg != "via-p1-rule" {
				t.Errorf("injected into p1: host A got %q", msg)
			}
			if msg := <-gotB; msg != "out-of-p1" {
				t.Errorf("sent out of p1: host B got %q", msg)
			}
		})
	}
}

func udpFrame(t *testing.T, src, dst net.HardwareAddr, sip, dip string, port int, payload string) []byte {
	eth := &layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP(sip), DstIP: net.ParseIP(dip)}
	udp := &layers.UDP{SrcPort: 9999, DstPort: layers.UDPPort(port)}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type nsHost interface{ Do(func() error) error }

// listenOnce receives one datagram on port inside h (3 s at most).
func listenOnce(t *testing.T, h nsHost, port int) <-chan string {
	var c *net.UDPConn
	if err := h.Do(func() error {
		var err error
		c, err = net.ListenUDP("udp", &net.UDPAddr{Port: port})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		defer c.Close()
		buf := make([]byte, 2048)
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, _, err := c.ReadFromUDP(buf)
		if err != nil {
			out <- "nothing: " + err.Error()
			return
		}
		out <- strings.TrimSpace(string(buf[:n]))
	}()
	return out
}

// Transparent cubes attached to a Linux interface that no cube is peered
// with, in a stack ordered by position.
func TestAttachToInterfaceWithPositions(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []string{"tc", "xdp"} {
		t.Run(hook, func(t *testing.T) {
			d := startDaemon(t)
			// x is the watched interface; frames written into its veth peer
			// y arrive on x as from the wire.
			lab := netlab.NewT(t)
			x, y, err := lab.RootVeth("wx", "wy")
			if err != nil {
				t.Fatal(err)
			}
			d.cli("cube", "add", "m1", "monitor", "--hook", hook)
			d.cli("cube", "add", "m2", "monitor", "--hook", hook)
			d.cli("cube", "add", "m3", "monitor", "--hook", hook)
			d.cli("attach", "m1", x)
			d.cli("attach", "m2", x, "--position", "first")
			d.cli("attach", "m3", x, "--position", "after:m2")
			var att []struct{ Cube, Point, Position string }
			d.json(&att, "get", "attachments")
			order := []string{}
			for _, at := range att {
				order = append(order, at.Cube)
			}
			if strings.Join(order, ",") != "m2,m3,m1" {
				t.Fatalf("stack order %v, want m2,m3,m1", order)
			}
			// Frames sent into y arrive on x from the wire: every monitor
			// counts them on ingress.
			frame := udpFrame(t, net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}, "198.18.9.1", "198.18.9.2", 9, "x")
			sendRaw(t, y, frame, 50)
			type row struct {
				Direction string `json:"direction"`
				Protocol  string `json:"protocol"`
				Packets   uint64 `json:"packets"`
			}
			ingressUDP := func(m string) (uint64, []row) {
				var rows []row
				d.json(&rows, "view", m, "counters")
				for _, r := range rows {
					if r.Direction == "ingress" && r.Protocol == "ipv4-udp" {
						return r.Packets, rows
					}
				}
				return 0, rows
			}
			// (the frames reach x through the veth's backlog, which a busy
			// machine may leave unprocessed for a while)
			poll(func() bool {
				for _, m := range []string{"m1", "m2", "m3"} {
					if n, _ := ingressUDP(m); n < 50 {
						return false
					}
				}
				return true
			})
			for _, m := range []string{"m1", "m2", "m3"} {
				if udp, rows := ingressUDP(m); udp != 50 {
					t.Errorf("%s counted %d ingress UDP frames, want 50: %+v", m, udp, rows)
				}
			}
			d.cli("detach", "m2")
			d.cli("detach", "m3")
			d.cli("detach", "m1")
			if out := d.cli("get", "attachments"); strings.Contains(out, "m1") {
				t.Fatalf("still attached:\n%s", out)
			}
		})
	}
}
