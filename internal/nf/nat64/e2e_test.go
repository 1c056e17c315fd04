package nat64

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	_ "github.com/edgenf/edgenf/internal/nf/router"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
)

// tcpdump captures on dev inside h into a pcap file until stop is called,
// which returns the packets.
func tcpdump(t *testing.T, h *netlab.Host, dev string) (stop func() []gopacket.Packet) {
	t.Helper()
	file := filepath.Join(t.TempDir(), h.Name+".pcap")
	cmd := exec.Command("ip", "netns", "exec", h.Name, "tcpdump", "-n", "-U", "--immediate-mode", "-s", "256", "-i", dev, "-w", file, "-c", "2000",
		// all but TCP segments without a SYN (a bulk transfer would flood the capture)
		"udp or icmp or icmp6 or (ip and tcp[13] & 2 != 0) or (ip6 and ip6[6] = 6 and ip6[53] & 2 != 0)")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("tcpdump: %v", err)
	}
	// tcpdump says "listening on" once its socket is open.
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var said []string
		for sc.Scan() {
			if said = append(said, sc.Text()); strings.Contains(sc.Text(), "listening on") {
				listening <- ""
				for sc.Scan() {
				}
				return
			}
		}
		listening <- strings.Join(said, "; ")
	}()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	select {
	case said := <-listening:
		if said != "" {
			t.Fatalf("tcpdump in %s: %s", h.Name, said)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("tcpdump in %s did not start", h.Name)
	}
	return func() []gopacket.Packet {
		time.Sleep(200 * time.Millisecond) // the last packets reach the file
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("tcpdump in %s did not stop", h.Name)
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := pcapgo.NewReader(f)
		if err != nil {
			t.Fatalf("tcpdump's file: %v", err)
		}
		var pkts []gopacket.Packet
		src := gopacket.NewPacketSource(r, r.LinkType())
		for p := range src.Packets() {
			pkts = append(pkts, p)
		}
		return pkts
	}
}

// udpEcho answers every datagram on port in h with "payload|source".
func udpEcho(t *testing.T, h *netlab.Host, port int) {
	t.Helper()
	var c *net.UDPConn
	if err := h.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{Port: port})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			c.WriteToUDP([]byte(string(buf[:n])+"|"+from.String()), from)
		}
	}()
}

// udpDial opens a connected UDP socket in h from lport to dst.
func udpDial(t *testing.T, h *netlab.Host, lport int, dst string) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	if err := h.Do(func() (err error) {
		c, err = net.DialUDP("udp6", &net.UDPAddr{Port: lport}, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(dst)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ask sends msg and waits for an answer (or an error the kernel reports on
// the socket: ECONNREFUSED from an ICMPv6 port unreachable), retrying for a
// bounded time while neighbours resolve.
func ask(ctx context.Context, c *net.UDPConn, msg string) (string, error) {
	buf := make([]byte, 2048)
	var err error
	for i := 0; i < 20 && ctx.Err() == nil; i++ {
		if _, err = c.Write([]byte(msg)); err != nil {
			return "", err
		}
		c.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		var n int
		if n, err = c.Read(buf); err == nil {
			return string(buf[:n]), nil
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return "", err
		}
	}
	return "", fmt.Errorf("no answer: %w", err)
}

// TestE2ENAT64: an IPv6-only host (2001:db8:1::10, a default route and
// nothing else) behind an edgenf router reaches an IPv4-only server
// (198.18.0.1) as 64:ff9b::198.18.0.1 through a nat64 cube on the router's
// inside port, at both hooks: UDP (the server sees the pool address), TCP
// (1 MB, checked end to end), ping6, and a UDP datagram to a closed port
// whose ICMP port unreachable comes back as ICMPv6 (the host's socket gets
// ECONNREFUSED). tcpdump on both sides asserts the headers on the wire:
// IPv6 between the host and the router, IPv4 from the pool between the
// router and the server, both ICMP errors.
func TestE2ENAT64(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			lab := netlab.NewT(t)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			h6, err := lab.Host("h6")
			must(err)
			srv, err := lab.Host("srv")
			must(err)
			must(h6.Sysctl("net.ipv6.conf.default.dad_transmits", "0"))
			must(h6.Sysctl("net.ipv6.conf.default.accept_ra", "0"))
			lan, err := lab.Veth(h6, "eth0", "lan", "2001:db8:1::10/64")
			must(err)
			wan, err := lab.Veth(srv, "eth0", "wan", "198.18.0.1/24")
			must(err)
			must(h6.AddRoute("default", "2001:db8:1::1"))
			must(srv.AddRoute("198.19.64.0/24", "198.18.0.254"))
			e := nftest.Engine(t)
			nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
				if err := tp.AddCube(&cube.Cube{Name: "r1", Type: "router", Hook: hook, Ports: []cube.Port{
					{Name: "lan", Index: -1, Peer: lan, Addresses: []string{"2001:db8:1::1/64", "198.19.65.1/30"}},
					{Name: "wan", Index: -1, Peer: wan, Addresses: []string{"198.18.0.254/24"}},
				}}); err != nil {
					return err
				}
				// The pool is reached through the translator on lan: one
				// route and a static neighbour (the translator puts the
				// host's MAC address on the frames).
				for table, row := range map[string]string{
					"routes": `{"prefix":"198.19.64.0/24","next_hop":"198.19.65.2","port":"lan"}`,
					"arp":    `{"ip":"198.19.65.2","mac":"02:00:00:00:64:64"}`,
				} {
					if _, err := tp.PutEntry("r1", table, json.RawMessage(row)); err != nil {
						return err
					}
				}
				if err := tp.AddCube(&cube.Cube{Name: "n64", Type: "nat64", Hook: hook,
					Config: json.RawMessage(`{"pool":"198.19.64.1-198.19.64.4"}`)}); err != nil {
					return err
				}
				return tp.Attach("n64", "r1:lan", "last")
			})
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			udpEcho(t, srv, 7007)
			stop6 := tcpdump(t, h6, "eth0")
			stop4 := tcpdump(t, srv, "eth0")

			c := udpDial(t, h6, 41000, "[64:ff9b::c612:1]:7007")
			got, err := ask(ctx, c, "hello")
			must(err)
			seen, ok := strings.CutPrefix(got, "hello|")
			ap, perr := netip.ParseAddrPort(seen)
			if !ok || perr != nil || !netip.MustParsePrefix("198.19.64.0/30").Contains(ap.Addr()) && ap.Addr() != netip.MustParseAddr("198.19.64.4") {
				t.Fatalf("the server saw %q, want a pool address", got)
			}
			must(h6.Ping(ctx, "64:ff9b::c612:1", 3))
			closed := udpDial(t, h6, 41001, "[64:ff9b::c612:1]:7009")
			if _, err := ask(ctx, closed, "anyone?"); !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("UDP to a closed port: %v, want connection refused (ICMP port unreachable translated)", err)
			}
			must(netlab.TCPTransfer(ctx, h6, srv, "64:ff9b::c612:1", 7008, 1<<20))
			p6, p4 := stop6(), stop4()

			// On the host's side: IPv6 only, from and to 64:ff9b::198.18.0.1.
			var udpBack, errBack bool
			for _, p := range p6 {
				if p.Layer(layers.LayerTypeIPv4) != nil {
					t.Fatalf("IPv4 on the host's link: %v", p)
				}
				ip, _ := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
				if ip == nil || ip.SrcIP.String() != "64:ff9b::c612:1" {
					continue
				}
				if u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP); u != nil && u.SrcPort == 7007 && u.DstPort == 41000 && strings.HasPrefix(string(u.Payload), "hello|198.19.64.") {
					udpBack = true
				}
				if ic, _ := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6); ic != nil && ic.TypeCode == layers.CreateICMPv6TypeCode(layers.ICMPv6TypeDestinationUnreachable, layers.ICMPv6CodePortUnreachable) {
					// The quoted packet (after 4 unused bytes): the host's
					// datagram as it sent it, cut after 8 bytes of UDP.
					q := ic.Payload
					if len(q) >= 4+48 && q[4+6] == 17 && net.IP(q[4+8:4+24]).String() == "2001:db8:1::10" &&
						net.IP(q[4+24:4+40]).String() == "64:ff9b::c612:1" && binary.BigEndian.Uint16(q[4+40:]) == 41001 &&
						binary.BigEndian.Uint16(q[4+42:]) == 7009 {
						errBack = true
					}
				}
			}
			if !udpBack || !errBack {
				t.Fatalf("host side (%d packets): UDP reply from 64:ff9b::c612:1 seen %v, ICMPv6 port unreachable quoting the host's datagram seen %v", len(p6), udpBack, errBack)
			}
			// On the server's side: IPv4 only, from the pool.
			var udpOut, tcpOut, echoOut, errOut bool
			for _, p := range p4 {
				if p.Layer(layers.LayerTypeIPv6) != nil {
					t.Fatalf("IPv6 on the server's link: %v", p)
				}
				ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
				if ip == nil {
					continue
				}
				fromPool := strings.HasPrefix(ip.SrcIP.String(), "198.19.64.") && ip.DstIP.String() == "198.18.0.1"
				if u, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP); fromPool && u != nil && u.DstPort == 7007 && string(u.Payload) == "hello" {
					udpOut = true
				}
				if tc, _ := p.Layer(layers.LayerTypeTCP).(*layers.TCP); fromPool && tc != nil && tc.DstPort == 7008 && tc.SYN {
					tcpOut = true
				}
				if ic, _ := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ic != nil {
					if fromPool && ic.TypeCode.Type() == layers.ICMPv4TypeEchoRequest {
						echoOut = true
					}
					if ip.SrcIP.String() == "198.18.0.1" && ic.TypeCode == layers.CreateICMPv4TypeCode(layers.ICMPv4TypeDestinationUnreachable, layers.ICMPv4CodePort) {
						errOut = true
					}
				}
			}
			if !udpOut || !tcpOut || !echoOut || !errOut {
				t.Fatalf("server side (%d packets): UDP %v, TCP SYN %v, echo request %v from the pool; port unreachable to it %v", len(p4), udpOut, tcpOut, echoOut, errOut)
			}
			v, err := e.View(tenant.Admin, "n64", "sessions")
			must(err)
			protos := map[string]bool{}
			for _, s := range v.([]Session) {
				protos[s.Proto] = true
				if s.Host == "" || !strings.HasPrefix(s.Outside, "198.19.64.") {
					t.Errorf("session %+v", s)
				}
			}
			if !protos["udp"] || !protos["tcp"] || !protos["icmp"] {
				t.Fatalf("sessions %+v, want udp, tcp and icmp ones", v)
			}
		})
	}
}
