package capture

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

func frame(t *testing.T, sport uint16) []byte {
	eth := &layers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0, 1}, DstMAC: []byte{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: []byte{198, 18, 0, 1}, DstIP: []byte{198, 18, 0, 2}}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: 53}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload("hello")); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tshark reads what NgWriter writes: names, directions, nanosecond
// timestamps, truncation, statistics; and ToPcap's pcap.
func TestPcapngReadByTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed")
	}
	dir := t.TempDir()
	var b bytes.Buffer
	w, err := NewNgWriter(&b, "edgenf capture at c1:p0", []Interface{{Name: "c1:p0", Description: "cube c1 port p0", Filter: "udp", Snaplen: 40}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 123456789)
	f1, f2 := frame(t, 1000), frame(t, 1001)
	if err := w.WritePacket(Packet{Time: t0, Dir: Ingress, Len: len(f1), Data: f1}); err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(Packet{Time: t0.Add(time.Microsecond), Dir: Egress, Len: len(f2), Data: f2[:40]}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteStats(0, Stats{Start: t0, End: t0.Add(time.Second), Seen: 5, Matched: 3, RingDrop: 1, Delivered: 2}); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	ng := filepath.Join(dir, "x.pcapng")
	os.WriteFile(ng, b.Bytes(), 0o644)
	out, err := exec.Command("tshark", "-r", ng, "-T", "fields", "-e", "frame.interface_name", "-e", "frame.packet_flags_direction",
		"-e", "frame.time_epoch", "-e", "frame.len", "-e", "frame.cap_len", "-e", "udp.srcport").Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("tshark read %d frames:\n%s", len(lines), out)
	}
	for i, want := range []string{"c1:p0\t0x00000001\t1700000000.123456789\t" + itoa(len(f1)) + "\t" + itoa(len(f1)) + "\t1000",
		"c1:p0\t0x00000002\t1700000000.123457789\t" + itoa(len(f2)) + "\t40\t1001"} {
		if lines[i] != want {
			t.Errorf("frame %d: %q, want %q", i, lines[i], want)
		}
	}
	var pc bytes.Buffer
	pw := NewPcapWriter(&pc)
	var st Stats
	if err := ReadBlocks(bytes.NewReader(b.Bytes()), func(typ uint32, block []byte) error {
		if IsStats(typ) {
			st = ParseStats(block)
		}
		return pw.Block(typ, block)
	}); err != nil {
		t.Fatal(err)
	}
	if st.Seen != 5 || st.Matched != 3 || st.RingDrop != 1 || st.Delivered != 2 {
		t.Errorf("statistics read back: %+v", st)
	}
	p := filepath.Join(dir, "x.pcap")
	os.WriteFile(p, pc.Bytes(), 0o644)
	out, err = exec.Command("tshark", "-r", p, "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.cap_len", "-e", "udp.srcport").Output()
	if err != nil || strings.TrimSpace(string(out)) != "1700000000.123456789\t"+itoa(len(f1))+"\t1000\n1700000000.123457789\t40\t1001" {
		t.Fatalf("tshark on the pcap: %v\n%s", err, out)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
