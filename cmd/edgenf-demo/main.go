// Command edgenf-demo builds the quick-start topologies and sends real
// traffic through them:
//
//	up     the 5G edge: a simulated gNB with two UEs, the upf cube set up
//	       over PFCP, a firewall and a NAT on its N6 side, a data network
//	       (make demo)
//	chain  two hosts joined by a service chain of three cubes with a monitor
//	       attached to the middle one (make demo-chain)
//	down   removes everything either made (make demo-clean)
//
// It leaves the daemon and its cubes running to explore.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
)

const (
	prefix  = "demo"
	workDir = "/run/edgenf-demo"
	bpffs   = "/sys/fs/bpf/edgenf-demo"
	socket  = "/run/edgenf/edgenf.sock"
)

func main() {
	cmd := "up"
	if len(os.Args) > 1 {
		cmd = os.Args[1]
	}
	var err error
	switch cmd {
	case "up":
		err = upfUp()
	case "chain":
		err = chainUp()
	case "down":
		err = down()
	default:
		err = fmt.Errorf("usage: edgenf-demo [up|chain|down]")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

var bin string

func step(format string, args ...any) { fmt.Printf("\n\033[1m== "+format+"\033[0m\n", args...) }

// run prints a command, runs it, and prints its output.
func run(name string, args ...string) (string, error) {
	fmt.Printf("$ %s %s\n", name, strings.Join(args, " "))
	path := name
	if name == "edgenf" {
		path = filepath.Join(bin, "edgenf")
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	fmt.Print(indent(string(out)))
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

const topology = `# The demo's service chain: host A ↔ c1 ↔ c2 ↔ c3 ↔ host B, with a monitor
# counting what enters c2. Apply edits with: edgenf apply -f %s
cubes:
  - name: c1
    type: portfwd
    ports:
      - {name: p0, peer: %s}
      - {name: p1, peer: "c2:p0"}
    tables:
      rules:
        - {in_port: p0, out_port: p1}
        - {in_port: p1, out_port: p0}
  - name: c2
    type: portfwd
    ports:
      - {name: p0}
      - {name: p1, peer: "c3:p0"}
    tables:
      rules:
        - {in_port: p0, out_port: p1}
        - {in_port: p1, out_port: p0}
  - name: c3
    type: portfwd
    ports:
      - {name: p0}
      - {name: p1, peer: %s}
    tables:
      rules:
        - {in_port: p0, out_port: p1}
        - {in_port: p1, out_port: p0}
  - name: m1
    type: monitor
attachments:
  - {cube: m1, point: "c2:p0"}
`

// begin removes a demo still running and makes the work directory.
func begin() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	bin = filepath.Dir(exe)
	if _, err := os.Stat(filepath.Join(workDir, "edgenfd.pid")); err == nil {
		fmt.Println("a demo is already running; removing it first")
		if err := down(); err != nil {
			return err
		}
	}
	return os.MkdirAll(workDir, 0o700)
}

func chainUp() error {
	if err := begin(); err != nil {
		return err
	}
	step("1. Two hosts in network namespaces")
	lab, err := netlab.New(prefix)
	if err != nil {
		return err
	}
	a, err := lab.Host("a")
	if err != nil {
		return err
	}
	b, err := lab.Host("b")
	if err != nil {
		return err
	}
	ra, err := lab.Veth(a, "eth0", "a", "198.18.0.1/24", "2001:db8::1/64")
	if err != nil {
		return err
	}
	rb, err := lab.Veth(b, "eth0", "b", "198.18.0.2/24", "2001:db8::2/64")
	if err != nil {
		return err
	}
	fmt.Printf("  host A: namespace %s, 198.18.0.1/24, veth %s in the root namespace\n", a.Name, ra)
	fmt.Printf("  host B: namespace %s, 198.18.0.2/24, veth %s in the root namespace\n", b.Name, rb)

	step("2. Start the daemon")
	if err := startDaemon(); err != nil {
		return err
	}

	step("3. Apply the service chain (declarative)")
	file := filepath.Join(workDir, "topology.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(topology, file, ra, rb)), 0o644); err != nil {
		return err
	}
	fmt.Print(indent(fmt.Sprintf(topology, file, ra, rb)))
	if _, err := run("edgenf", "apply", "-f", file); err != nil {
		return err
	}
	if _, err := run("edgenf", "get", "cubes"); err != nil {
		return err
	}

	step("4. Real traffic through the chain")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := run("ip", "netns", "exec", a.Name, "ping", "-c", "3", "-i", "0.2", "198.18.0.2"); err != nil {
		return err
	}
	if _, err := run("ip", "netns", "exec", b.Name, "ping", "-6", "-c", "3", "-i", "0.2", "2001:db8::1"); err != nil {
		return err
	}
	fmt.Println("$ (10,000 UDP datagrams of 512 bytes from A to B)")
	sent, recv, err := netlab.UDPFlow(ctx, a, b, "198.18.0.2", 7000, 10000, 512, 20000)
	if err != nil {
		return err
	}
	fmt.Printf("  sent %d, received %d intact\n", sent, recv)
	fmt.Println("$ (a 20 MB TCP transfer from A to B, content verified)")
	start := time.Now()
	if err := netlab.TCPTransfer(ctx, a, b, "198.18.0.2", 7001, 20<<20); err != nil {
		return err
	}
	fmt.Printf("  20 MB in %v\n", time.Since(start).Round(time.Millisecond))

	step("5. What the kernel counted")
	run("edgenf", "stats")
	run("edgenf", "view", "m1", "counters")

	fmt.Printf(`
The demo is still running. Explore it:
  edgenf get topology -o yaml      the running state, in the format apply takes
  edgenf describe cube c2          one cube, its ports and counters
  edgenf top                       live rates (run traffic in another terminal)
  ip netns exec %s ping 198.18.0.2
  edgenf cube swap c2              hot-swap a program, no packet lost
  edgenf apply -f %s   after editing the file
  edgenf --help                    everything else
Daemon log: %s/edgenfd.log
Tear it all down with: make demo-clean
`, a.Name, file, workDir)
	return nil
}

func startDaemon() error {
	logf, err := os.Create(filepath.Join(workDir, "edgenfd.log"))
	if err != nil {
		return err
	}
	d := exec.Command(filepath.Join(bin, "edgenfd"), "-socket", socket, "-bpffs", bpffs, "-state", filepath.Join(workDir, "state.json"))
	d.Stdout, d.Stderr = logf, logf
	d.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	fmt.Printf("$ edgenfd -socket %s -bpffs %s -state %s/state.json &\n", socket, bpffs, workDir)
	if err := d.Start(); err != nil {
		return err
	}
	os.WriteFile(filepath.Join(workDir, "edgenfd.pid"), []byte(fmt.Sprint(d.Process.Pid)), 0o644)
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(socket); err == nil {
			fmt.Printf("  edgenfd running (pid %d), API on %s\n", d.Process.Pid, socket)
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("edgenfd did not start; see %s/edgenfd.log", workDir)
}

func down() error {
	exe, _ := os.Executable()
	bin = filepath.Dir(exe)
	if b, err := os.ReadFile(filepath.Join(workDir, "edgenfd.pid")); err == nil {
		var pid int
		fmt.Sscan(string(b), &pid)
		if p, err := os.FindProcess(pid); err == nil && pid > 0 {
			p.Signal(syscall.SIGTERM)
			time.Sleep(300 * time.Millisecond)
		}
	}
	out, err := exec.Command(filepath.Join(bin, "edgenfd"), "-destroy", "-socket", socket, "-bpffs", bpffs,
		"-state", filepath.Join(workDir, "state.json")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("edgenfd -destroy: %v: %s", err, out)
	}
	if err := netlab.RemoveAll(prefix); err != nil {
		return err
	}
	os.RemoveAll(workDir)
	fmt.Println("demo removed: namespaces, links, programs, pins and state")
	return nil
}
