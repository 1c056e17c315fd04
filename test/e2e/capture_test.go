package e2e

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"
)

// knownFrames are the frames A sends, byte for byte: UDP to port 53 and to
// another port, TCP, ICMP, from A's MAC to B's, and one tagged frame.
func knownFrames(t *testing.T, a, b *netlab.Host) [][]byte {
	ma, _ := a.MAC("eth0")
	mb, _ := b.MAC("eth0")
	var out [][]byte
	for i := range 12 {
		var f []byte
		switch i % 4 {
		case 0:
			f = nftest.UDP4("198.18.0.1", "198.18.0.2", uint16(3000+i), 53, []byte(fmt.Sprintf("query %d", i)))
		case 1:
			f = nftest.UDP4("198.18.0.1", "198.18.0.2", uint16(3000+i), 9999, bytes.Repeat([]byte{byte(i)}, 100+i))
		case 2:
			f = nftest.TCP4("198.18.0.1", "198.18.0.2", uint16(40000+i), 80)
		default:
			f = nftest.ICMP4Echo("198.18.0.1", "198.18.0.2", 9, uint16(i))
		}
		copy(f[0:6], mb)
		copy(f[6:12], ma)
		out = append(out, f)
	}
	// VLAN 10: at TC the kernel holds the tag outside the frame, and the
	// capture puts it back
	return append(out, nftest.VLANTagged(out[1], 1))
}

// tsharkFrames reads a capture file with tshark: each frame's raw bytes,
// direction flags and interface name.
type tsharkFrame struct {
	raw       []byte
	dir, name string
}

func tsharkFrames(t *testing.T, file string) []tsharkFrame {
	t.Helper()
	out, err := exec.Command("tshark", "-r", file, "-T", "json", "-x").Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v", file, err)
	}
	var pkts []struct {
		Source struct {
			Layers struct {
				Raw []any `json:"frame_raw"`
			} `json:"layers"`
		} `json:"_source"`
	}
	if err := json.Unmarshal(out, &pkts); err != nil {
		t.Fatalf("tshark json: %v", err)
	}
	fields, err := exec.Command("tshark", "-r", file, "-T", "fields", "-e", "frame.packet_flags_direction", "-e", "frame.interface_name").Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v", file, err)
	}
	lines := strings.Split(strings.TrimSpace(string(fields)), "\n")
	var fs []tsharkFrame
	for i, p := range pkts {
		if len(p.Source.Layers.Raw) == 0 || i >= len(lines) {
			t.Fatalf("tshark gave no raw bytes or fields for frame %d", i)
		}
		raw, err := hex.DecodeString(fmt.Sprint(p.Source.Layers.Raw[0]))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Split(lines[i], "\t")
		if len(f) != 2 {
			t.Fatalf("tshark fields %q", lines[i])
		}
		fs = append(fs, tsharkFrame{raw, f[0], f[1]})
	}
	return fs
}

// startCapture runs `edgenf capture` in the background and waits until its
// capture cube is attached; wait returns its output once it ended.
func (d *daemon) startCapture(args ...string) (cmd *exec.Cmd, wait func() string) {
	d.t.Helper()
	var out bytes.Buffer
	cmd = exec.Command(filepath.Join(binDir, "edgenf"), append([]string{"--socket", d.socket, "capture"}, args...)...)
	cmd.Stderr = &out
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	return cmd, func() string {
		d.t.Helper()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				d.t.Fatalf("edgenf capture %v: %v\n%s", args, err, out.String())
			}
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			d.t.Fatalf("edgenf capture %v did not end:\n%s", args, out.String())
		}
		return out.String()
	}
}

// captures lists the capture cubes attached now.
func (d *daemon) captures() []string {
	var cubes []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	d.json(&cubes, "cube", "list")
	var out []string
	for _, c := range cubes {
		if c.Type == "capture" {
			out = append(out, c.Name)
		}
	}
	return out
}

func (d *daemon) waitCaptures(n int) {
	d.t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if len(d.captures()) == n {
			return
		}
	}
	d.t.Fatalf("%d captures running, want %d", len(d.captures()), n)
}

// Known frames through a three-cube chain; captures at the middle port,
// without and with a filter: tshark finds exactly the frames expected,
// byte for byte, in order, inbound at c2:p0; the capture cube is gone after.
func TestCaptureAtMiddlePort(t *testing.T) {
	testenv.E2E(t)
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed (scripts/setup.sh installs it)")
	}
	for _, at := range nftest.Attachments[:2] {
		t.Run(at.Name, func(t *testing.T) {
			d := startDaemonFor(t, at)
			_, a, b, ra, rb := twoHosts(t)
			buildChain(t, d, ra, rb, string(at.Hook), string(at.Hook), string(at.Hook))
			frames := knownFrames(t, a, b)
			var dns [][]byte
			for i, f := range frames {
				if i%4 == 0 && i < 12 {
					dns = append(dns, f)
				}
			}
			dir := t.TempDir()
			for _, c := range []struct {
				name, point string
				args        []string
				want        [][]byte
			}{
				// B answers (ICMP errors, a TCP reset, echo replies): out
				// of c2:p0, so only ingress is asked for here
				{"all", "c2:p0", []string{"--direction", "in"}, frames},
				{"filtered", "c2:p0", []string{"udp", "port", "53"}, dns},
				// the interface A's frames enter edgenf on
				{"iface", ra, []string{"--direction", "in"}, frames},
			} {
				file := filepath.Join(dir, c.name+".pcapng")
				cmd, wait := d.startCapture(append([]string{c.point, "-c", fmt.Sprint(len(c.want)), "-w", file}, c.args...)...)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				d.waitCaptures(1)
				sendRawFrom(t, a, frames...)
				msg := wait()
				if !strings.Contains(msg, fmt.Sprintf("%d packets captured at %s", len(c.want), c.point)) {
					t.Errorf("%s: capture said %q", c.name, msg)
				}
				got := tsharkFrames(t, file)
				if len(got) != len(c.want) {
					t.Fatalf("%s: tshark read %d frames, want %d", c.name, len(got), len(c.want))
				}
				for i := range got {
					if !bytes.Equal(got[i].raw, c.want[i]) || got[i].dir != "0x00000001" || got[i].name != c.point {
						t.Errorf("%s: frame %d: %x dir %s on %q, want %x inbound on %s", c.name, i, got[i].raw, got[i].dir, got[i].name, c.want[i], c.point)
					}
				}
				if left := d.captures(); len(left) != 0 {
					t.Errorf("capture cubes left after the capture: %v", left)
				}
			}
			// the chain still forwards everything after the captures
			if got := sendUDP(t, a, b, "198.18.0.2", 5301, 500, 200); got != 500 {
				t.Fatalf("%d of 500 datagrams after the captures", got)
			}
		})
	}
}

// `edgenf capture -w - | tshark -r -` shows frames while the capture runs;
// Ctrl-C ends it cleanly. A capture with a small -c on a busy port stops
// after that many frames and the traffic goes on undisturbed.
func TestCaptureStreamsLiveAndStopsCleanly(t *testing.T) {
	testenv.E2E(t)
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed (scripts/setup.sh installs it)")
	}
	d := startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	buildChain(t, d, ra, rb, "xdp", "xdp", "xdp")
	frames := knownFrames(t, a, b)

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	capCmd, wait := d.startCapture("c2:p1", "--direction", "out", "-w", "-")
	capCmd.Stdout = pw
	tshark := exec.Command("tshark", "-l", "-r", "-", "-T", "fields", "-e", "frame.len", "-e", "frame.interface_name")
	tshark.Stdin = pr
	tout, err := tshark.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := capCmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tshark.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	pr.Close()
	defer tshark.Process.Kill()
	d.waitCaptures(1)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(tout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	sendRawFrom(t, a, frames...)
	for i, f := range frames {
		select {
		case l := <-lines:
			if want := fmt.Sprintf("%d\tc2:p1", len(f)); l != want {
				t.Fatalf("tshark line %d: %q, want %q", i, l, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("tshark saw %d of %d frames while the capture ran", i, len(frames))
		}
	}
	capCmd.Process.Signal(os.Interrupt)
	wait()
	tshark.Wait()
	d.waitCaptures(0)

	// busy port, -c 5
	file := filepath.Join(t.TempDir(), "busy.pcap")
	cmd, wait := d.startCapture("c2:p0", "-c", "5", "-w", file)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.waitCaptures(1)
	const n = 20000
	if got := sendUDP(t, a, b, "198.18.0.2", 5302, n, 64); got != n {
		t.Fatalf("%d of %d datagrams arrived while capturing", got, n)
	}
	if msg := wait(); !strings.Contains(msg, "5 packets captured") {
		t.Errorf("capture said %q", msg)
	}
	out, err := exec.Command("tshark", "-r", file, "-T", "fields", "-e", "udp.dstport").Output()
	if err != nil || strings.Count(string(out), "5302\n") != 5 || len(strings.Fields(string(out))) != 5 {
		t.Fatalf("tshark on the pcap: %v %q", err, out)
	}
	d.waitCaptures(0)
}

// A tenant captures at its own points and nowhere else; bad requests are
// refused with the field at fault.
func TestCaptureTenantBoundary(t *testing.T) {
	testenv.E2E(t)
	tl := startTenants(t)
	red := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(binDir, "edgenf"), append([]string{"--server", tl.url, "--token", redToken, "capture"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	file := filepath.Join(t.TempDir(), "x.pcapng")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"b1:p0", "-c", "1", "-w", file}, `no cube named "b1"`},
		{[]string{tl.bRa, "-c", "1", "-w", file}, "not assigned to tenant red"},
		{[]string{"r1:p0", "-w", file, "udp", "prot", "53"}, "syntax error"},
		{[]string{"r1:p0", "--snaplen", "99999", "-w", file}, "snap length"},
		{[]string{"r1:p0", "--duration", "-1s", "-w", file}, "duration"},
	} {
		out, err := red(c.args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("red: capture %v: %v %q, want refusal %q", c.args, err, out, c.want)
		}
	}
	if strings.Contains(tl.topology(), "capture-") {
		t.Fatal("a refused capture left a cube")
	}
	// its own port: a ping's echo requests and replies
	done := make(chan struct{})
	var out string
	var err error
	go func() { out, err = red("r1:p0", "-c", "2", "--duration", "20s", "-w", file, "icmp"); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(tl.topology(), "capture-") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := tl.redA.Ping(ctx(t, 20*time.Second), "198.18.0.2", 1); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil || !strings.Contains(out, "2 packets captured at r1:p0") {
		t.Fatalf("red's own capture: %v %s", err, out)
	}
}

// A slice's entry and exit are capture points: red captures its own slice
// (slice/red: the echo request going into the slice's chain, the reply
// coming out of it, with their directions), never blue's slice nor the
// administrator's slicer port, and its capture cube goes with the capture.
// Red's slice leads into its chain through a slicer port, or straight into
// its chain's entry (chain: the capture sits there, the frames' direction
// flags are that point's).
func TestCaptureAtSlices(t *testing.T) {
	testenv.E2E(t)
	for _, chain := range []bool{false, true} {
		t.Run(map[bool]string{false: "port", true: "chain"}[chain], func(t *testing.T) { captureAtSlice(t, chain) })
	}
}

func captureAtSlice(t *testing.T, chain bool) {
	_, a, _, ra, rb := twoHosts(t)
	tokens := map[string]any{
		"tokens": []map[string]string{{"token": adminToken}, {"token": redToken, "tenant": "red"}, {"token": blueToken, "tenant": "blue"}},
		// blue holds one cube, all its quota allows
		"tenants": []map[string]any{{"name": "red"}, {"name": "blue", "quota": map[string]int64{"cubes": 1}}},
	}
	b, _ := json.Marshal(tokens)
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	d := startDaemon(t, "-listen", addr, "-tokens", tokFile)
	topo := filepath.Join(dir, "slices.yaml")
	redPort, redSlice := `
      - {name: red, peer: "redpf:p0"}`, "port: red"
	if chain {
		redPort, redSlice = "", `chain: "redpf:p0"`
	}
	if err := os.WriteFile(topo, []byte(fmt.Sprintf(`cubes:
  - name: edge
    type: slicer
    hook: tc
    config: {uplink: up, default: red}
    ports:
      - {name: up, peer: %s}%s
      - {name: blue, peer: "bluepf:p0"}
    tables:
      slices:
        - {name: red, id: 1, tenant: red, %s, rules: [{dst: 198.18.0.2/32}]}
        - {name: blue, id: 2, tenant: blue, port: blue, rules: [{proto: tcp}]}
  - name: redpf
    type: portfwd
    hook: tc
    tenant: red
    ports: [{name: p0}, {name: p1, peer: %s}]
    tables:
      rules: [{in_port: p0, out_port: p1}, {in_port: p1, out_port: p0}]
  - name: bluepf
    type: portfwd
    hook: tc
    tenant: blue
    ports: [{name: p0}, {name: p1}]
    tables:
      rules: [{in_port: p0, out_port: p1}, {in_port: p1, out_port: p0}]
`, ra, redPort, redSlice, rb)), 0o600); err != nil {
		t.Fatal(err)
	}
	d.cli("apply", "-f", topo)
	red := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(binDir, "edgenf"), append([]string{"--server", "http://" + addr, "--token", redToken, "capture"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	file := filepath.Join(dir, "red.pcapng")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"slice/blue", "-c", "1", "-w", file}, `no slice named "blue"`},
		{[]string{"slice/edge/blue", "-c", "1", "-w", file}, `no slice named "edge/blue"`},
		{[]string{"slice/nope", "-c", "1", "-w", file}, `no slice named "nope"`},
		{[]string{"edge:red", "-c", "1", "-w", file}, `no cube named "edge"`},
	} {
		if out, err := red(c.args...); err == nil || !strings.Contains(out, c.want) {
			t.Errorf("red: capture %v: %v %q, want refusal %q", c.args, err, out, c.want)
		}
	}
	// a capture cube counts against the tenant's quota, at a slice too
	blue := exec.Command(filepath.Join(binDir, "edgenf"), "--server", "http://"+addr, "--token", blueToken, "capture", "slice/blue", "-c", "1", "-w", file)
	if out, err := blue.CombinedOutput(); err == nil || !strings.Contains(string(out), "over quota cubes") {
		t.Errorf("blue: capture at its slice beyond its cube quota: %v %s", err, out)
	}
	if len(d.captures()) != 0 {
		t.Fatal("a refused capture left a cube")
	}
	done := make(chan struct{})
	var out string
	var err error
	go func() { out, err = red("slice/red", "-c", "2", "--duration", "30s", "-w", file, "icmp"); close(done) }()
	d.waitCaptures(1)
	if err := a.Ping(ctx(t, 20*time.Second), "198.18.0.2", 1); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil || !strings.Contains(out, "2 packets captured at slice/red") {
		t.Fatalf("red's slice capture: %v %s", err, out)
	}
	frames := tsharkFrames(t, file)
	if len(frames) != 2 {
		t.Fatalf("%d frames in the capture, want the echo request and its reply", len(frames))
	}
	// the request leaves the slicer into the slice (out), the reply comes
	// back out of it (in); at a chain entry the request enters its cube
	// (in), the reply leaves it (out)
	want := [2]string{"0x00000002", "0x00000001"}
	if chain {
		want[0], want[1] = want[1], want[0]
	}
	if frames[0].dir != want[0] || frames[1].dir != want[1] || frames[0].name != "slice red" {
		t.Fatalf("directions %q %q, interface %q: want %q then %q at \"slice red\"", frames[0].dir, frames[1].dir, frames[0].name, want[0], want[1])
	}
	if frames[0].raw[23] != 1 || frames[0].raw[34] != 8 || frames[1].raw[34] != 0 {
		t.Fatalf("not an ICMP echo request and reply: % x / % x", frames[0].raw[:40], frames[1].raw[:40])
	}
	d.waitCaptures(0)
}
