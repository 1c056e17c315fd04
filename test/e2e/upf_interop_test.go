package e2e

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// capture is a tshark capture running in the background.
type capture struct {
	cmd  *exec.Cmd
	file string
	errs *logFile
}

// startCapture captures on iface, in the namespace ns ("" for the root
// namespace).
func startCapture(t *testing.T, ns, iface, filter string) *capture {
	t.Helper()
	c := &capture{file: filepath.Join(t.TempDir(), iface+".pcapng"), errs: newLogFile(t)}
	args := []string{"tshark", "-i", iface, "-f", filter, "-w", c.file, "-q"}
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	c.cmd = exec.Command(args[0], args[1:]...)
	c.cmd.Stderr = c.errs.f
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	if !poll(func() bool { return strings.Contains(c.errs.String(), "Capturing on") }) {
		t.Fatalf("tshark did not start: %s", c.errs)
	}
	time.Sleep(200 * time.Millisecond)
	return c
}

func (c *capture) stop() {
	if c.cmd.ProcessState == nil {
		c.cmd.Process.Signal(os.Interrupt)
		c.cmd.Wait()
	}
}

// await waits until what tshark reads from the capture so far with args
// holds every one of wants (dumpcap writes frames out within about 250 ms
// of their arrival, later on a busy machine), for at most poll's bound;
// the caller then stops the capture and checks it.
func (c *capture) await(args []string, wants ...string) {
	poll(func() bool {
		out, _ := exec.Command("tshark", append([]string{"-r", c.file}, args...)...).Output()
		for _, w := range wants {
			if !strings.Contains("\n"+string(out), w) {
				return false
			}
		}
		return true
	})
}

// tshark reads the capture with the given extra arguments.
func (c *capture) tshark(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("tshark", append([]string{"-r", c.file}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tshark %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// clean fails the test if any packet of the capture that filter selects
// is malformed or has an error-level expert note.
func (c *capture) clean(t *testing.T, filter string, decodeAs ...string) {
	t.Helper()
	args := []string{"-V", "-Y", filter}
	for _, d := range decodeAs {
		args = append(args, "-d", d)
	}
	out := c.tshark(t, args...)
	for _, bad := range []string{"Malformed Packet", "[Expert Info (Error"} {
		if i := strings.Index(out, bad); i >= 0 {
			t.Errorf("tshark finds %q in %s:\n%s", bad, filepath.Base(c.file), out[max(0, i-2000):min(len(out), i+300)])
		}
	}
}

// Interoperability: scapy's PFCP layer as the SMF; tshark's PFCP and GTP
// dissectors reading everything the UPF sent.
func TestUPFInteropScapyAndTshark(t *testing.T) {
	testenv.E2E(t)
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Fatal("tshark is needed (scripts/setup.sh installs it)")
	}
	venv, err := exec.Command("../../scripts/pyvenv.sh").Output()
	if err != nil {
		t.Fatalf("scripts/pyvenv.sh: %v", err)
	}
	python := filepath.Join(strings.TrimSpace(string(venv)), "bin", "python")
	l := newUPFLab(t)
	pfcpCap := startCapture(t, "", "lo", fmt.Sprintf("udp port %d", l.pfcp.Port()))
	// The gNB's side of n3: frames an XDP program redirects into a veth
	// skip its sender's taps.
	gtpCap := startCapture(t, l.gnbHost.Name, "eth0", "udp port 2152")

	// GTP-U the UPF sends: downlink G-PDUs with a PDU Session Container,
	// an Echo Response, an Error Indication (unknown TEID), and the End
	// Marker the scapy SMF asks for.
	u, _, _ := l.attach(t, "ue1", 1, 0x9001)
	c := ctx(t, 60*time.Second)
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		if u.Host.Ping(c, "198.18.2.2", 1) == nil {
			break
		}
	}
	if err := u.Host.Ping(c, "198.18.2.2", 3); err != nil {
		t.Fatal(err)
	}
	gtpFrom(t, l.gnbHost, []byte{0x32, 1, 0, 4, 0, 0, 0, 0, 0, 7, 0, 0})    // Echo Request
	gtpFrom(t, l.gnbHost, []byte{0x30, 0xff, 0, 20, 0xde, 0xad, 0xbe, 0xef, // G-PDU to an unknown TEID
		0x45, 0, 0, 20, 0, 0, 0x40, 0, 64, 17, 0x2c, 0x4d, 198, 19, 0, 9, 198, 18, 2, 2}) // (an IPv4 header)

	cmd := exec.CommandContext(c, python, "../../scripts/upf_interop.py", l.pfcp.String(), "198.18.1.2")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("scapy SMF: %v", err)
	}
	pfcpDecode := fmt.Sprintf("udp.port==%d,pfcp", l.pfcp.Port())
	pfcpTypes := []string{"-d", pfcpDecode, "-Y", fmt.Sprintf("pfcp && udp.srcport==%d", l.pfcp.Port()), "-T", "fields", "-e", "pfcp.msg_type"}
	wantTypes := []string{"2", "6", "51", "53", "55", "56", "10"}
	var wantLines []string
	for _, w := range wantTypes {
		wantLines = append(wantLines, "\n"+w+"\n")
	}
	pfcpCap.await(pfcpTypes, wantLines...)
	gtpFields := []string{"-Y", "gtp && ip.src==198.18.1.1", "-T", "fields", "-e", "gtp.message", "-e", "gtp.ext_hdr.pdu_ses_con.qos_flow_id"}
	wantGTP := []string{"0xff\t9", "0x02", "0x1a", "0xfe"}
	gtpCap.await(gtpFields, wantGTP...)
	pfcpCap.stop()
	gtpCap.stop()

	pfcpCap.clean(t, fmt.Sprintf("udp.srcport==%d", l.pfcp.Port()), pfcpDecode)
	gtpCap.clean(t, "ip.src==198.18.1.1")
	// What the UPF sent, as tshark reads it.
	types := pfcpCap.tshark(t, pfcpTypes...)
	for _, want := range wantTypes {
		if !strings.Contains("\n"+types, "\n"+want+"\n") {
			t.Errorf("no PFCP message of type %s from the UPF in the capture; got %q", want, strings.Fields(types))
		}
	}
	gtp := gtpCap.tshark(t, gtpFields...)
	for _, want := range wantGTP {
		if !strings.Contains(gtp, want) {
			t.Errorf("no GTP-U %q from the UPF in the capture; got:\n%s", want, gtp)
		}
	}
}

// gtpFrom sends one GTP-U message from the gNB's namespace to the UPF.
func gtpFrom(t *testing.T, h *netlab.Host, msg []byte) {
	t.Helper()
	var conn *net.UDPConn
	if err := h.Do(func() error {
		var err error
		conn, err = net.DialUDP("udp", &net.UDPAddr{Port: 40152}, net.UDPAddrFromAddrPort(netip.MustParseAddrPort("198.18.1.1:2152")))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
}
