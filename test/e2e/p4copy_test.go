package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
	"golang.org/x/sys/unix"
)

// Multicast replication made in the kernel: the l2learn switch floods
// frames for an unknown destination through group 1 to a cube (a portfwd
// cube that leads to host b) and to two interfaces (hosts c and d). Every
// copy arrives once, byte for byte the frame sent, the counters are exact,
// and the daemon transmitted none of the copies (slow_copies 0): they were
// all made in the kernel, at TC by clones (into the injector for the cube)
// and at XDP by the TC copy machine behind the XDP program.
func TestP4MulticastCopiesInKernel(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) { mcastInKernel(t, hook) })
	}
}

func mcastInKernel(t *testing.T, hook string) {
	d := startDaemon(t)
	lab := netlab.NewT(t)
	hosts := map[string]*netlab.Host{}
	roots := map[string]string{}
	names := []string{"a", "b", "c", "d"}
	for i, n := range names {
		hosts[n], roots[n] = quietHost(t, lab, n, fmt.Sprintf("198.18.0.%d/24", i+1))
	}
	prog, _ := filepath.Abs("../../examples/p4/l2learn.p4")
	d.cli("cube", "add", "sw", "p4", "--hook", hook, "--program", prog, "--config", learnRules)
	d.cli("cube", "add", "f", "portfwd", "--hook", hook)
	d.cli("port", "add", "sw", "p1", "--peer", roots["a"], "--index", "1")
	d.cli("port", "add", "sw", "p2", "--index", "2")
	d.cli("port", "add", "f", "p0", "--peer", "sw:p2")
	d.cli("port", "add", "f", "p1", "--peer", roots["b"])
	d.cli("table", "add", "f", "rules", "in_port=p0", "out_port=p1")
	d.cli("port", "add", "sw", "p3", "--peer", roots["c"], "--index", "3")
	d.cli("port", "add", "sw", "p4", "--peer", roots["d"], "--index", "4")
	d.cli("p4", "mc-mgrp-create", "sw", "1")
	d.cli("p4", "mc-node-associate", "sw", "1", "0", "1", "2", "3", "4")

	mons := map[string]*monitor{}
	for _, n := range []string{"b", "c", "d"} {
		mons[n] = openMonitor(t, hosts[n])
	}
	ma, _ := hosts["a"].MAC("eth0")
	unknown := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x99} // never learned: always flooded
	const n = 40
	var sent [][]byte
	for i := 0; i < n; i++ {
		// different sizes: the payload after the headers must be intact
		sent = append(sent, udpFrame(t, ma, unknown, "198.18.0.1", "198.18.0.9", 7400+i, fmt.Sprintf("copy-%03d-%s", i, bytes.Repeat([]byte{'x'}, i*30))))
	}
	sendRawFrom(t, hosts["a"], sent...)
	for _, h := range []string{"b", "c", "d"} {
		got := mons[h].framesFrom("198.18.0.1", n)
		if len(got) != n {
			t.Fatalf("host %s received %d of %d flooded frames", h, len(got), n)
		}
		for i, f := range got {
			if !bytes.Equal(f, sent[i]) {
				t.Fatalf("host %s: frame %d is\n%x\nwant\n%x", h, i, f, sent[i])
			}
		}
		if extra := mons[h].framesFrom("198.18.0.1", 0); len(extra) != 0 {
			t.Fatalf("host %s received %d frames too many", h, len(extra))
		}
	}
	var bytesSent uint64
	for _, f := range sent {
		bytesSent += uint64(len(f))
	}
	st := d.portStats("sw", "f")
	for _, p := range []string{"p2", "p3", "p4"} {
		if s := st["sw"][p]; s.TxPackets != n || s.TxBytes != bytesSent {
			t.Errorf("sw %s: %d packets %d bytes out, want %d and %d", p, s.TxPackets, s.TxBytes, n, bytesSent)
		}
	}
	if s := st["sw"]["p1"]; s.RxPackets != n || s.TxPackets != 0 || s.DropPackets != 0 {
		t.Errorf("sw p1: %+v, want %d in and nothing else", s, n)
	}
	if s := st["f"]["p0"]; s.RxPackets != n || st["f"]["p1"].TxPackets != n {
		t.Errorf("f: p0 %+v p1 %+v, want %d through", s, st["f"]["p1"], n)
	}
	if c := slowCopies(t, d, "sw"); c != 0 {
		t.Errorf("the daemon transmitted %d copies: they should be made in the kernel", c)
	}

	// VLAN-tagged frames (XDP sees the tag in the frame; the kernel moves
	// it out of the frame before TC): every copy keeps its tag. The hosts'
	// packet sockets get the frames untagged (the tag is metadata there).
	var tagged, onWire [][]byte
	for i := 0; i < 10; i++ {
		f := udpFrame(t, ma, unknown, "198.18.0.1", "198.18.0.9", 7450+i, fmt.Sprintf("tagged-%02d", i))
		tagged = append(tagged, f)
		onWire = append(onWire, append(append(append([]byte(nil), f[:12]...), 0x81, 0x00, 0x00, 0x07), f[12:]...)) // VLAN 7
	}
	sendRawFrom(t, hosts["a"], onWire...)
	for _, h := range []string{"b", "c", "d"} {
		got, tags := mons[h].taggedFrom("198.18.0.1", len(tagged))
		if len(got) != len(tagged) {
			t.Fatalf("host %s received %d of %d tagged frames", h, len(got), len(tagged))
		}
		for i, f := range got {
			if !bytes.Equal(f, tagged[i]) || tags[i] != 7 {
				t.Fatalf("host %s: tagged frame %d (vlan %d) is\n%x\nwant (vlan 7)\n%x", h, i, tags[i], f, tagged[i])
			}
		}
	}

	// datagrams from a socket (checksum offload) to b, whose address the
	// switch never learns: flooded, b's stack takes every one intact
	// through the cube, c and d see them too
	mb, _ := hosts["b"].MAC("eth0")
	must(t, hosts["a"].SetNeigh("eth0", "198.18.0.2", mb.String()))
	d.cli("stats", "reset", "sw")
	if got := sendUDP(t, hosts["a"], hosts["b"], "198.18.0.2", 7500, 50, 200); got != 50 {
		t.Fatalf("b received %d of 50 flooded datagrams", got)
	}
	for _, h := range []string{"c", "d"} {
		if got := len(mons[h].framesFrom("198.18.0.1", 50)); got != 50 {
			t.Fatalf("host %s saw %d of 50 flooded datagrams", h, got)
		}
	}
	if c := slowCopies(t, d, "sw"); c != 0 {
		t.Errorf("the daemon transmitted %d copies of the datagrams", c)
	}
}

// slowCopies is the number of copies of a cube's packets the daemon sent
// through the slow path.
func slowCopies(t *testing.T, d *daemon, cube string) uint64 {
	t.Helper()
	var st []struct {
		SlowCopies *uint64 `json:"slow_copies"`
	}
	d.json(&st, "stats", cube)
	if len(st) != 1 || st[0].SlowCopies == nil {
		t.Fatalf("stats %s: no slow_copies", cube)
	}
	return *st[0].SlowCopies
}

// framesFrom returns the UDP/IPv4 frames from src received until want of
// them came (or, with want 0, until the link has been quiet for a while),
// in order of arrival.
func (m *monitor) framesFrom(src string, want int) [][]byte {
	var out [][]byte
	ip := net.ParseIP(src).To4()
	buf := make([]byte, 4096)
	quiet := 0
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		if want > 0 && len(out) >= want {
			break
		}
		n, _, err := unix.Recvfrom(m.fd, buf, 0)
		if err != nil {
			if quiet++; want == 0 && quiet >= 3 {
				break
			}
			continue
		}
		f := buf[:n]
		if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[23] != 17 || !net.IP(f[26:30]).Equal(ip) {
			continue
		}
		out = append(out, append([]byte(nil), f...))
	}
	return out
}

// taggedFrom is framesFrom with each frame's VLAN tag as the packet socket
// reports it (-1: none).
func (m *monitor) taggedFrom(src string, want int) ([][]byte, []int) {
	if err := unix.SetsockoptInt(m.fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		m.t.Fatal(err)
	}
	defer unix.SetsockoptInt(m.fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 0)
	var out [][]byte
	var tags []int
	ip := net.ParseIP(src).To4()
	buf, oob := make([]byte, 4096), make([]byte, 256)
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && len(out) < want; {
		n, oobn, _, _, err := unix.Recvmsg(m.fd, buf, oob, 0)
		if err != nil {
			continue
		}
		f := buf[:n]
		if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[23] != 17 || !net.IP(f[26:30]).Equal(ip) {
			continue
		}
		tag := -1
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for _, c := range msgs {
			if c.Header.Level == unix.SOL_PACKET && c.Header.Type == unix.PACKET_AUXDATA && len(c.Data) >= 20 {
				if binary.NativeEndian.Uint32(c.Data[0:])&unix.TP_STATUS_VLAN_VALID != 0 {
					tag = int(binary.NativeEndian.Uint16(c.Data[16:]) & 0xfff)
				}
			}
		}
		out = append(out, append([]byte(nil), f...))
		tags = append(tags, tag)
	}
	return out, tags
}
