// Package capture turns what the capture NF's ring buffer holds into files
// tcpdump, tshark and Wireshark read: the filter compiler (tcpdump
// expressions to classic BPF), the records' layout, and pcapng and pcap
// writers.
package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/bpf"
)

// MaxFilterLen bounds a filter expression (libpcap's parser is fed nothing
// longer).
const MaxFilterLen = 2048

// MaxProgram is the most classic BPF instructions the kernel side runs
// (capture.bpf.c's CAP_PROG_MAX).
const MaxProgram = 512

// ErrNoTcpdump says filters cannot be compiled on this machine.
var ErrNoTcpdump = errors.New("capture filters are compiled by libpcap through tcpdump, which is not installed (apt-get install tcpdump); captures without --filter work")

// emptyPcap is a pcap file header with no packets, link type Ethernet:
// tcpdump -r compiles its filter for that link type, the way it filters a
// file (VLAN tags are matched in the frame, not in socket metadata).
var emptyPcap = []byte{
	0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 4, 0, 1, 0, 0, 0,
}

var (
	cacheMu sync.Mutex
	cache   = map[string][]bpf.RawInstruction{}
)

// Compile turns a tcpdump filter expression into classic BPF for Ethernet
// frames, as tcpdump itself would filter a capture file: libpcap is the
// definition of that language (every primitive, qualifier and arithmetic
// expression tcpdump users know), so edgenf asks it, through tcpdump -ddd,
// rather than reimplementing it. tcpdump runs without privileges (as
// nobody), confined by bubblewrap when it is there: host names in filters
// are not resolved (give addresses). "" compiles to nil: every frame.
func Compile(ctx context.Context, expr string) ([]bpf.RawInstruction, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, nil
	}
	if len(expr) > MaxFilterLen {
		return nil, fmt.Errorf("filter: %d bytes, at most %d", len(expr), MaxFilterLen)
	}
	if strings.ContainsAny(expr, "\x00\n\r") {
		return nil, fmt.Errorf("filter: control characters in the expression")
	}
	cacheMu.Lock()
	prog, ok := cache[expr]
	cacheMu.Unlock()
	if ok {
		return prog, nil
	}
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		return nil, ErrNoTcpdump
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	argv := []string{tcpdump, "-ddd", "-r", "-", "--", expr}
	if bwrap, err := exec.LookPath("bwrap"); err == nil {
		// confined: no network (host names are not resolved), nothing
		// writable, no environment
		argv = append([]string{bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
			"--ro-bind", "/", "/", "--"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(emptyPcap)
	if os.Geteuid() == 0 {
		// edgenfd runs as root: drop to nobody for the compile. Anyone
		// else (a user's CLI, tests run as nobody) may not change
		// identity, and need not: it runs as itself.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		msg := lastLine(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("filter %q: %s", expr, strings.TrimPrefix(msg, "tcpdump: "))
	}
	prog, err = ParseDDD(out.String())
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", expr, err)
	}
	cacheMu.Lock()
	if len(cache) > 256 {
		clear(cache)
	}
	cache[expr] = prog
	cacheMu.Unlock()
	return prog, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "reading from file") {
			return l
		}
	}
	return ""
}

// ParseDDD reads a program in tcpdump -ddd's form (a count, then "code jt
// jf k" per line) and checks it is one the kernel side runs: at most
// MaxProgram instructions, every jump forward and inside the program, and
// every path ending in a return (so the interpreter always finishes).
func ParseDDD(s string) ([]bpf.RawInstruction, error) {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	n, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || n != len(lines)-1 {
		return nil, fmt.Errorf("unexpected output of tcpdump -ddd: %q", lines[0])
	}
	prog := make([]bpf.RawInstruction, 0, n)
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 4 {
			return nil, fmt.Errorf("unexpected output of tcpdump -ddd: %q", l)
		}
		var v [4]uint64
		for i, x := range f {
			if v[i], err = strconv.ParseUint(x, 10, 32); err != nil {
				return nil, fmt.Errorf("unexpected output of tcpdump -ddd: %q", l)
			}
		}
		prog = append(prog, bpf.RawInstruction{Op: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])})
	}
	return prog, Check(prog)
}

// Check verifies what the in-kernel interpreter relies on for termination
// and sense (it stays safe whatever it is given: the verifier saw to that).
func Check(prog []bpf.RawInstruction) error {
	if len(prog) == 0 {
		return fmt.Errorf("empty filter program")
	}
	if len(prog) > MaxProgram {
		return fmt.Errorf("the filter compiles to %d instructions, at most %d: simplify it", len(prog), MaxProgram)
	}
	for pc, in := range prog {
		class := in.Op & 0x07
		switch {
		case class == 0x05 && in.Op&0xf0 == 0x00: // ja
			if uint64(pc)+1+uint64(in.K) >= uint64(len(prog)) {
				return fmt.Errorf("instruction %d jumps out of the program", pc)
			}
		case class == 0x05:
			if pc+1+int(in.Jt) >= len(prog) || pc+1+int(in.Jf) >= len(prog) {
				return fmt.Errorf("instruction %d jumps out of the program", pc)
			}
		}
	}
	if prog[len(prog)-1].Op&0x07 != 0x06 {
		return fmt.Errorf("the filter program does not end with a return")
	}
	return nil
}
