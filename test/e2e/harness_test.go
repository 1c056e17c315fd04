// Package e2e tests edgenf end to end: the real daemon and CLI binaries,
// network namespaces, real traffic.
package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"
)

var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Geteuid() != 0 || testing.Short() {
		os.Exit(m.Run()) // every test skips (testenv.E2E): nothing to build
	}
	dir, err := os.MkdirTemp("", "edgenf-e2e-bin")
	if err != nil {
		panic(err)
	}
	// crashpoints: $EDGENF_CRASH_AT kills the daemon at a named step
	// (internal/engine/crashpoint_on.go)
	build := exec.Command("go", "build", "-tags", "crashpoints", "-o", dir+"/", "github.com/edgenf/edgenf/cmd/edgenfd", "github.com/edgenf/edgenf/cmd/edgenf", "github.com/edgenf/edgenf/cmd/edgenf-cni")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build binaries:", err)
		os.Exit(1)
	}
	binDir = dir
	// the daemons check that every change edits its working copy through
	// the copy-on-write accessors (internal/engine/cow.go)
	os.Setenv("EDGENF_CHECK_EDITS", "1")
	code := m.Run()
	os.RemoveAll(dir)
	if left := leftovers(); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "the e2e tests left behind:", left)
		code = 1
	}
	os.Exit(code)
}

// leftovers lists what this test process created and did not remove: pinned
// objects of its daemons, namespaces and links of its labs.
func leftovers() []string {
	left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/bpf/enfd-%d-*", os.Getpid()))
	ours := netlab.UniquePrefix()[:4] // "n" + this process's id
	ns, _ := filepath.Glob("/run/netns/" + ours + "*")
	left = append(left, ns...)
	if links, err := net.Interfaces(); err == nil {
		for _, l := range links {
			if strings.HasPrefix(l.Name, ours) {
				left = append(left, "link "+l.Name)
			}
		}
	}
	return left
}

var daemonSeq atomic.Uint32

// daemon is one running edgenfd with private socket, state and bpffs root.
type daemon struct {
	t      *testing.T
	socket string
	state  string
	bpffs  string
	cmd    *exec.Cmd
	log    *logFile
	flags  []string // more edgenfd flags
	env    []string // more environment of the next start
	netns  string   // network namespace (path) it runs in; "": the test's
}

// logFile collects a process's output in a file the process writes
// itself: no pipe and no copying goroutine stand between them, so a line
// the process wrote before anything the test then observes (its socket, a
// metric, a counter, a state file) is in the file when the test reads it.
// (Through a pipe, the observation could overtake the line: CI failed on
// that race.)
type logFile struct{ f *os.File }

func newLogFile(t *testing.T) *logFile {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &logFile{f}
}

// String is everything written so far.
func (l *logFile) String() string {
	b, err := os.ReadFile(l.f.Name())
	if err != nil {
		return fmt.Sprintf("(log %s: %v)", l.f.Name(), err)
	}
	return string(b)
}

func startDaemon(t *testing.T, flags ...string) *daemon {
	t.Helper()
	return startDaemonIn(t, "", flags...)
}

// startDaemonIn starts a daemon inside a network namespace (a "node"; ""
// is the test's own).
func startDaemonIn(t *testing.T, netns string, flags ...string) *daemon {
	t.Helper()
	testenv.NeedRoot(t)
	dir := t.TempDir()
	d := &daemon{
		t:      t,
		socket: filepath.Join(dir, "edgenf.sock"),
		state:  filepath.Join(dir, "state.json"),
		bpffs:  fmt.Sprintf("/sys/fs/bpf/enfd-%d-%d", os.Getpid(), daemonSeq.Add(1)),
		flags:  flags,
		netns:  netns,
	}
	d.start()
	t.Cleanup(func() {
		d.stop()
		out, err := d.command("-socket", d.socket, "-state", d.state, "-bpffs", d.bpffs, "-destroy").CombinedOutput()
		if err != nil {
			t.Errorf("destroy: %v: %s", err, out)
		}
		// nothing of the daemon's outlives -destroy (in the test's own
		// namespace; a node's goes with its namespace)
		if l, err := netlink.LinkByName(datapath.InjectorName(d.bpffs)); err == nil && netns == "" {
			t.Errorf("the daemon's injection veth %s is still there after -destroy", l.Attrs().Name)
			netlink.LinkDel(l)
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.log)
		}
	})
	return d
}

// startDaemonFor starts a daemon that attaches TC programs at's way.
func startDaemonFor(t *testing.T, at nftest.Attachment) *daemon {
	t.Helper()
	if at.TC == "" {
		return startDaemon(t)
	}
	return startDaemon(t, "-tc-attach", string(at.TC))
}

func (d *daemon) start() {
	d.t.Helper()
	d.log = newLogFile(d.t)
	d.cmd = d.command(append([]string{"-socket", d.socket, "-state", d.state, "-bpffs", d.bpffs}, d.flags...)...)
	d.cmd.Stdout, d.cmd.Stderr = d.log.f, d.log.f
	d.cmd.Env = append(os.Environ(), d.env...)
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	// A start restores the state: programs loaded (the verifier), pins
	// adopted, interfaces attached. Under a load of 30 that took more than
	// 10 s (the test then failed, and its cleanup deleted the interfaces
	// under the still-restoring daemon).
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", d.socket); err == nil {
			c.Close()
			return
		}
		if d.cmd.ProcessState != nil {
			break
		}
	}
	d.t.Fatalf("edgenfd did not start:\n%s", d.log)
}

// command is edgenfd with args, in the daemon's namespace.
func (d *daemon) command(args ...string) *exec.Cmd {
	argv := append([]string{filepath.Join(binDir, "edgenfd")}, args...)
	if d.netns != "" {
		argv = append([]string{"nsenter", "--net=" + d.netns}, argv...)
	}
	return exec.Command(argv[0], argv[1:]...)
}

// p4rtSocket is the daemon's P4Runtime unix socket (beside its API socket).
func (d *daemon) p4rtSocket() string { return filepath.Join(filepath.Dir(d.socket), "p4rt.sock") }

// crashed waits for a daemon that killed itself at a crash point.
func (d *daemon) crashed() {
	d.t.Helper()
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		d.kill()
		d.t.Fatalf("the daemon did not stop at its crash point:\n%s", d.log)
	}
}

// kill stops the daemon with SIGKILL (no cleanup of any kind).
func (d *daemon) kill() {
	d.cmd.Process.Kill()
	d.cmd.Wait()
}

func (d *daemon) stop() {
	if d.cmd != nil && d.cmd.ProcessState == nil {
		d.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { d.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second): // a clean stop folds the journal: slow on a loaded machine
			d.kill()
		}
	}
}

// cli runs the edgenf CLI against this daemon; it fails the test on error.
func (d *daemon) cli(args ...string) string {
	d.t.Helper()
	out, err := d.try(args...)
	if err != nil {
		d.t.Fatalf("edgenf %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// try runs the CLI and returns its output and error (exit status).
func (d *daemon) try(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "edgenf"), append([]string{"--socket", d.socket}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// json runs the CLI with -o json and decodes the result.
func (d *daemon) json(v any, args ...string) {
	d.t.Helper()
	out := d.cli(append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		d.t.Fatalf("edgenf %v: %v\n%s", args, err, out)
	}
}

type counters struct {
	RxPackets   uint64 `json:"rx_packets"`
	RxBytes     uint64 `json:"rx_bytes"`
	TxPackets   uint64 `json:"tx_packets"`
	TxBytes     uint64 `json:"tx_bytes"`
	DropPackets uint64 `json:"drop_packets"`
}

// portStats returns cube → port → counters.
func (d *daemon) portStats(cubes ...string) map[string]map[string]counters {
	d.t.Helper()
	var all []struct {
		Cube  string `json:"cube"`
		Ports []struct {
			Port string `json:"port"`
			counters
		} `json:"ports"`
		Directions map[string]counters `json:"directions"`
	}
	d.json(&all, append([]string{"stats"}, cubes...)...)
	out := map[string]map[string]counters{}
	for _, c := range all {
		out[c.Cube] = map[string]counters{}
		for _, p := range c.Ports {
			out[c.Cube][p.Port] = p.counters
		}
		for dir, s := range c.Directions {
			out[c.Cube][dir] = s
		}
	}
	return out
}

// twoHosts makes hosts a (198.18.0.1) and b (198.18.0.2) in one subnet, each
// with a veth whose root end is returned. Neighbour entries are static and
// IPv6 is off on the hosts, so the only traffic is the test's and counters
// can be compared exactly.
func twoHosts(t *testing.T) (lab *netlab.Lab, a, b *netlab.Host, ra, rb string) {
	t.Helper()
	lab = netlab.NewT(t)
	var err error
	if a, err = lab.Host("a"); err != nil {
		t.Fatal(err)
	}
	if b, err = lab.Host("b"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*netlab.Host{a, b} {
		if err := h.Sysctl("net.ipv6.conf.default.disable_ipv6", "1"); err != nil {
			t.Fatal(err)
		}
	}
	if ra, err = lab.Veth(a, "eth0", "a", "198.18.0.1/24"); err != nil {
		t.Fatal(err)
	}
	if rb, err = lab.Veth(b, "eth0", "b", "198.18.0.2/24"); err != nil {
		t.Fatal(err)
	}
	ma, _ := a.MAC("eth0")
	mb, _ := b.MAC("eth0")
	for _, n := range []struct {
		h       *netlab.Host
		ip, mac string
	}{{a, "198.18.0.2", mb.String()}, {b, "198.18.0.1", ma.String()}} {
		if err := n.h.SetNeigh("eth0", n.ip, n.mac); err != nil {
			t.Fatal(err)
		}
	}
	return
}

// poll calls cond every 50 ms until it holds, for at most 30 s, and says
// whether it held. Whatever the daemon or the kernel produces on its own time
// (slow-path frames, learned entries, logs, metrics, counters of frames
// still in a backlog) is waited for with it, then asserted on exactly: the
// bound is for a machine busy with other tests, not a timing assertion.
func poll(cond func() bool) bool {
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// waitFor polls cond (see poll) and fails the test if it never held.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll(cond) {
		t.Fatalf("%s: not after 30 s", what)
	}
}

func ctx(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// sendUDP sends n datagrams from a to dst:port and counts those b receives
// intact (sequence-numbered payload), without any warm-up traffic, so that
// counters can be compared exactly.
func sendUDP(t *testing.T, a, b *netlab.Host, dst string, port, n, size int) int {
	t.Helper()
	var rx *net.UDPConn
	if err := b.Do(func() error {
		var err error
		rx, err = net.ListenUDP("udp", &net.UDPAddr{Port: port})
		if err == nil {
			rx.SetReadBuffer(8 << 20)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	var tx *net.UDPConn
	if err := a.Do(func() error {
		var err error
		tx, err = net.DialUDP("udp", nil, &net.UDPAddr{IP: net.ParseIP(dst), Port: port})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	got := make(chan int)
	var sent atomic.Bool
	go func() {
		seen := map[uint32]bool{}
		buf := make([]byte, 65536)
		for {
			// a datagram may come up to 2 s after the last one was sent
			// (and any time while the sender, however slowed down by a
			// busy machine, is still sending; and is still read when
			// this goroutine wakes past its deadline with it queued)
			rx.SetReadDeadline(time.Now().Add(2 * time.Second))
			m, _, err := rx.ReadFromUDP(buf)
			if err != nil {
				if os.IsTimeout(err) && (!sent.Load() || netlab.Queued(rx)) {
					continue
				}
				break
			}
			if m != size || !validPayload(buf[:m]) {
				continue
			}
			seen[uint32(buf[0])<<24|uint32(buf[1])<<16|uint32(buf[2])<<8|uint32(buf[3])] = true
			if len(seen) == n {
				break
			}
		}
		got <- len(seen)
	}()
	payload := make([]byte, size)
	for i := 0; i < n; i++ {
		fillPayload(payload, uint32(i))
		if _, err := tx.Write(payload); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if i%200 == 199 {
			time.Sleep(2 * time.Millisecond) // stay under the receive buffer
		}
	}
	sent.Store(true)
	return <-got
}

func fillPayload(p []byte, seq uint32) {
	p[0], p[1], p[2], p[3] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
	for i := 4; i < len(p); i++ {
		p[i] = byte(int(seq) + i)
	}
}

func validPayload(p []byte) bool {
	seq := int(uint32(p[0])<<24 | uint32(p[1])<<16 | uint32(p[2])<<8 | uint32(p[3]))
	for i := 4; i < len(p); i++ {
		if p[i] != byte(seq+i) {
			return false
		}
	}
	return true
}
