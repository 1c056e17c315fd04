package e2e

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
	"golang.org/x/sys/unix"
)

// The port-scan detector of examples/p4/portscan.p4 as a cube: a source
// probing consecutive ports is blocked after SCAN_THRESHOLD (8) probes, its
// packets are dropped and cloned (clone session 100, configured through
// the CLI) to a monitor port, while a normal client keeps working. Bad
// clone-session and multicast configurations are refused and change
// nothing.
func TestP4PortScanMirrorsBlockedSource(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) { portScan(t, hook) })
	}
}

func portScan(t *testing.T, hook string) {
	d := startDaemon(t)
	lab := netlab.NewT(t)
	hosts := map[string]*netlab.Host{}
	roots := map[string]string{}
	ips := map[string]string{"c": "198.18.0.1", "s": "198.18.0.2", "v": "198.18.0.3", "m": "198.18.0.4"}
	for _, n := range []string{"c", "s", "v", "m"} {
		hosts[n], roots[n] = quietHost(t, lab, n, ips[n]+"/24")
	}
	mac := func(n string) string { m, _ := hosts[n].MAC("eth0"); return m.String() }
	for _, n := range []string{"c", "s"} {
		if err := hosts[n].SetNeigh("eth0", ips["v"], mac("v")); err != nil {
			t.Fatal(err)
		}
		if err := hosts["v"].SetNeigh("eth0", ips[n], mac(n)); err != nil {
			t.Fatal(err)
		}
	}

	prog, _ := filepath.Abs("../../examples/p4/portscan.p4")
	d.cli("cube", "add", "ps", "p4", "--program", prog, "--hook", hook)
	for i, n := range []string{"c", "s", "v", "m"} {
		d.cli("port", "add", "ps", "p"+n, "--peer", roots[n], "--index", fmt.Sprint(i+1))
	}
	for i, n := range []string{"c", "s", "v"} {
		d.cli("p4", "table-add", "ps", "ipv4_fwd", "forward", ips[n], "=>", fmt.Sprint(i+1))
	}
	d.cli("p4", "mirroring-add", "ps", "100", "4")

	// Bad configurations: precise errors, nothing changes.
	before := d.cli("p4", "mirroring-dump", "ps")
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"p4", "mirroring-add", "ps", "0", "4"}, "ids are 1..32767 (0 means no clone)"},
		{[]string{"p4", "mirroring-add", "ps", "40000", "4"}, "ids are 1..32767"},
		{[]string{"p4", "mirroring-add", "ps", "7", "70"}, "port 70: ports are 0..63 or 510"},
		{[]string{"p4", "mirroring-add", "ps", "7", "4", "--truncate", "3"}, "shorter than an Ethernet header"},
		{[]string{"p4", "mc-mgrp-create", "ps", "0"}, "ids are 1..65535"},
		{[]string{"p4", "mc-node-associate", "ps", "9", "0", "1"}, "9"},
	} {
		if out, err := d.try(bad.args...); err == nil || !strings.Contains(out, bad.want) {
			t.Fatalf("edgenf %s: %v\n%s (want %q)", strings.Join(bad.args, " "), err, out, bad.want)
		}
	}
	d.cli("p4", "mc-mgrp-create", "ps", "9")
	if out, err := d.try("p4", "mc-node-associate", "ps", "9", "0", "1", "1"); err == nil || !strings.Contains(out, "listed twice") {
		t.Fatalf("duplicate replica: %v\n%s", err, out)
	}
	d.cli("p4", "mc-mgrp-destroy", "ps", "9")
	if after := d.cli("p4", "mirroring-dump", "ps"); after != before {
		t.Fatalf("sessions changed by refused commands:\n%s\nthen\n%s", before, after)
	}

	mon := openMonitor(t, hosts["m"])
	if got := sendUDP(t, hosts["c"], hosts["v"], ips["v"], 7000, 50, 64); got != 50 {
		t.Fatalf("client: %d of 50", got)
	}
	// the scanner probes 20 consecutive ports; from the 9th on it is blocked
	if err := hosts["s"].Do(func() error {
		for p := 20000; p < 20020; p++ {
			u, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.ParseIP(ips["v"]), Port: p})
			if err != nil {
				return err
			}
			u.Write([]byte("probe"))
			u.Close()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ports := mon.udpFrom(ips["s"], 12)
	if len(ports) != 12 || ports[0] != 20008 || ports[11] != 20019 {
		t.Fatalf("monitor saw probes to %v, want 20008..20019", ports)
	}
	// blocked: even ordinary traffic of the scanner goes to the monitor only
	if got := sendUDP(t, hosts["s"], hosts["v"], ips["v"], 7001, 10, 64); got != 0 {
		t.Fatalf("blocked scanner got %d datagrams through", got)
	}
	if more := mon.udpFrom(ips["s"], 10); len(more) != 10 || more[0] != 7001 {
		t.Fatalf("monitor saw %v after the block, want 10 to 7001", more)
	}
	// the client is unaffected, and nothing of it reached the monitor
	if got := sendUDP(t, hosts["c"], hosts["v"], ips["v"], 7002, 50, 64); got != 50 {
		t.Fatalf("client after the scan: %d of 50", got)
	}
	if n := len(mon.udpFrom(ips["c"], 0)); n != 0 {
		t.Fatalf("monitor saw %d client packets", n)
	}
	cell := crc32.ChecksumIEEE(net.ParseIP(ips["s"]).To4()) % 1024
	if out := d.cli("p4", "register-read", "ps", "blocked", fmt.Sprint(cell), "-o", "json"); !strings.Contains(out, `"value": 1`) {
		t.Fatalf("blocked[%d]:\n%s", cell, out)
	}
	// the control plane unblocks it
	d.cli("p4", "register-write", "ps", "blocked", fmt.Sprint(cell), "0")
	d.cli("p4", "register-write", "ps", "scan_count", fmt.Sprint(cell), "0")
	if got := sendUDP(t, hosts["s"], hosts["v"], ips["v"], 7003, 10, 64); got != 10 {
		t.Fatalf("unblocked scanner: %d of 10", got)
	}
	// without the session the source is still dropped but nothing is copied
	d.cli("p4", "register-write", "ps", "blocked", fmt.Sprint(cell), "1")
	d.cli("p4", "mirroring-delete", "ps", "100")
	if got := sendUDP(t, hosts["s"], hosts["v"], ips["v"], 7004, 10, 64); got != 0 {
		t.Fatalf("blocked scanner without a session: %d through", got)
	}
	if n := len(mon.udpFrom(ips["s"], 0)); n != 0 {
		t.Fatalf("monitor saw %d copies without a clone session", n)
	}
}

// monitor reads every frame arriving on eth0 of a host.
type monitor struct {
	t  *testing.T
	fd int
}

func openMonitor(t *testing.T, h *netlab.Host) *monitor {
	t.Helper()
	m := &monitor{t: t, fd: -1}
	if err := h.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		proto := uint16(unix.ETH_P_ALL)<<8 | uint16(unix.ETH_P_ALL)>>8
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(proto))
		if err != nil {
			return err
		}
		m.fd = fd
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index})
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(m.fd) })
	tv := unix.NsecToTimeval((300 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(m.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	return m
}

// udpFrom returns the destination ports of the UDP/IPv4 frames from src
// received until want of them came (or, with want 0, until the link has
// been quiet for a while); frames from others are skipped.
func (m *monitor) udpFrom(src string, want int) []int {
	var ports []int
	ip := net.ParseIP(src).To4()
	buf := make([]byte, 2048)
	quiet := 0
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		if want > 0 && len(ports) >= want {
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
		ihl := int(f[14]&0xf) * 4
		ports = append(ports, int(binary.BigEndian.Uint16(f[14+ihl+2:])))
	}
	return ports
}

// The telemetry program of examples/p4/int_telemetry.p4: datagrams whose
// INT delay is over the threshold reach their destination AND are copied to
// a mirror port. The copy is made in the kernel at both hooks: at TC by a
// clone, at XDP by the TC copy machine (the copy keeps the INT header the
// forwarded packet loses); the daemon sends none of them.
func TestP4TelemetryMirrorsSlowPackets(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) { telemetry(t, hook) })
	}
}

func telemetry(t *testing.T, hook string) {
	d := startDaemon(t)
	lab := netlab.NewT(t)
	hosts := map[string]*netlab.Host{}
	roots := map[string]string{}
	ips := map[string]string{"a": "198.18.0.1", "b": "198.18.0.3", "m": "198.18.0.4"}
	for _, n := range []string{"a", "b", "m"} {
		hosts[n], roots[n] = quietHost(t, lab, n, ips[n]+"/24")
	}
	ma, _ := hosts["a"].MAC("eth0")
	mb, _ := hosts["b"].MAC("eth0")
	if err := hosts["a"].SetNeigh("eth0", ips["b"], mb.String()); err != nil {
		t.Fatal(err)
	}
	if err := hosts["b"].SetNeigh("eth0", ips["a"], ma.String()); err != nil {
		t.Fatal(err)
	}
	prog, _ := filepath.Abs("../../examples/p4/int_telemetry.p4")
	d.cli("cube", "add", "int", "p4", "--program", prog, "--hook", hook)
	d.cli("port", "add", "int", "pa", "--peer", roots["a"], "--index", "1")
	d.cli("port", "add", "int", "pb", "--peer", roots["b"], "--index", "3")
	d.cli("port", "add", "int", "pm", "--peer", roots["m"], "--index", "4")
	d.cli("p4", "table-add", "int", "ipv4_fwd", "forward", ips["a"], "=>", "1")
	d.cli("p4", "table-add", "int", "ipv4_fwd", "forward", ips["b"], "=>", "3")
	d.cli("p4", "table-add", "int", "int_sink", "strip_int", "3")
	d.cli("p4", "table-set-default", "int", "int_config", "set_int_params", "7", "1000", "200")
	d.cli("p4", "mirroring-add", "int", "200", "4")
	mon := openMonitor(t, hosts["m"])

	var rx *net.UDPConn
	if err := hosts["b"].Do(func() error {
		var err error
		rx, err = net.ListenUDP("udp", &net.UDPAddr{Port: 7000})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := hosts["a"].Do(func() error {
		tx, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.ParseIP(ips["b"]), Port: 5555})
		if err != nil {
			return err
		}
		defer tx.Close()
		for i := 0; i < 40; i++ {
			delay := uint32(100)
			if i%2 == 1 {
				delay = 5000 // over the threshold
			}
			p := make([]byte, 12+8)
			binary.BigEndian.PutUint32(p[0:], 9)
			binary.BigEndian.PutUint16(p[4:], 7000)
			binary.BigEndian.PutUint32(p[8:], delay)
			binary.BigEndian.PutUint64(p[12:], uint64(i))
			if _, err := tx.Write(p); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]bool{}
	buf := make([]byte, 2048)
	for len(got) < 40 {
		rx.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, _, err := rx.ReadFromUDP(buf)
		if err != nil {
			break
		}
		if n == 8 { // the INT header was removed at the sink
			got[binary.BigEndian.Uint64(buf[:8])] = true
		}
	}
	if len(got) != 40 {
		t.Fatalf("the sink received %d of 40 datagrams", len(got))
	}
	copies := mon.framesFrom(ips["a"], 20)
	if len(copies) != 20 {
		t.Fatalf("the mirror received %d copies, want 20 (the slow half)", len(copies))
	}
	for k, f := range copies {
		// the packets as received: to port 5555, with the INT header
		// (switch 9, to 7000, delay 5000) and the sequence number
		if len(f) != 14+20+8+20 {
			t.Fatalf("mirrored copy %d: %d bytes\n%x", k, len(f), f)
		}
		p := f[14+20+8:]
		if dport := binary.BigEndian.Uint16(f[14+20+2:]); dport != 5555 || binary.BigEndian.Uint32(p) != 9 ||
			binary.BigEndian.Uint16(p[4:]) != 7000 || binary.BigEndian.Uint32(p[8:]) != 5000 ||
			binary.BigEndian.Uint64(p[12:]) != uint64(2*k+1) {
			t.Fatalf("mirrored copy %d to port %d: payload %x, want the INT datagram %d as sent", k, dport, p, 2*k+1)
		}
	}
	if extra := mon.udpFrom(ips["a"], 0); len(extra) != 0 {
		t.Fatalf("%d more copies than packets over the threshold", len(extra))
	}
	var ctrs []struct {
		Packets uint64 `json:"packets"`
	}
	d.json(&ctrs, "p4", "counter-read", "int", "mirrored")
	if len(ctrs) != 1 || ctrs[0].Packets != 20 {
		t.Fatalf("mirrored counter: %+v", ctrs)
	}
	if c := slowCopies(t, d, "int"); c != 0 {
		t.Fatalf("the daemon transmitted %d copies: they should be made in the kernel", c)
	}
	if st := d.portStats("int"); st["int"]["pm"].TxPackets != 20 || st["int"]["pb"].TxPackets != 40 {
		t.Fatalf("counters: mirror %+v sink %+v, want 20 and 40 out", st["int"]["pm"], st["int"]["pb"])
	}
}
