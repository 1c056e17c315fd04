// Package doctor checks whether this machine can run edgenf, without
// changing anything: the kernel and the eBPF features the built-in NFs use
// (probed with cilium/ebpf's features package, not guessed from the
// version), JIT, bpffs, how TC programs attach, the memlock limit, clang for
// P4, XDP on the topology's interfaces. Every problem comes with the exact
// fix. `edgenf doctor` and `edgenfd -check` print its report.
package doctor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/bpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	_ "github.com/edgenf/edgenf/internal/nf/all" // the built-in NFs, whose objects are checked
	"github.com/edgenf/edgenf/internal/nf/slicer/shaping"
	"golang.org/x/sys/unix"
)

// Status of a check.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn" // works, with a limitation
	Fail Status = "FAIL" // edgenf (or that part of it) cannot work
	Skip Status = "skip" // could not be checked
)

// Result is one check's finding.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Options says what to check beyond the machine itself.
type Options struct {
	// BPFFS is the daemon's pin root (datapath.DefaultRoot if empty).
	BPFFS string
	// Interfaces are the Linux interfaces the topology uses: XDP native or
	// generic is reported for each.
	Interfaces []string
	// Daemon, if set, checks that the daemon answers; it returns a short
	// description ("3 cubes") or an error.
	Daemon func() (string, error)
}

// Run runs every check.
func Run(opt Options) []Result {
	if opt.BPFFS == "" {
		opt.BPFFS = datapath.DefaultRoot
	}
	root := os.Geteuid() == 0
	rs := []Result{kernel(root), btf(), jit(), bpffs(opt.BPFFS), tc(root), slicing(root), memlock(root), clang()}
	for _, i := range opt.Interfaces {
		rs = append(rs, xdp(i))
	}
	if opt.Daemon != nil {
		rs = append(rs, daemon(opt.Daemon))
	}
	return rs
}

// Failed reports whether any result is a failure.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Status == Fail {
			return true
		}
	}
	return false
}

// Print writes rs as a table, each fix on the line below its problem.
func Print(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Status, r.Check, r.Detail)
		if r.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", r.Fix)
		}
	}
	tw.Flush()
}

const needRoot = "run as root to probe the kernel (loading probe programs needs CAP_BPF)"

// kernel: the release, and every program type, map type and helper of the
// framework's and the built-in NFs' objects, probed.
func kernel(root bool) Result {
	r := Result{Check: "kernel", Detail: "Linux " + datapath.KernelRelease()}
	if !root {
		r.Status, r.Detail = Skip, r.Detail+"; "+needRoot
		return r
	}
	reqs, err := builtinRequirements()
	if err != nil {
		r.Status, r.Detail = Fail, err.Error()
		return r
	}
	need := reqs[0].Since
	missing := map[string][]string{} // version → what
	var worst datapath.Version
	n := 0
	for _, q := range reqs {
		err := q.Probe()
		switch {
		case errors.Is(err, ebpf.ErrNotSupported):
			missing[q.Since.String()] = append(missing[q.Since.String()], q.Kind+" "+q.Name)
			if worst.Less(q.Since) {
				worst = q.Since
			}
		case err != nil:
			r.Status, r.Detail = Fail, fmt.Sprintf("%s: probing %s: %v", r.Detail, q, err)
			return r
		}
		n++
	}
	if len(missing) == 0 {
		r.Status = OK
		r.Detail += fmt.Sprintf(" has all %d program types, map types and helpers the built-in NFs use (they need Linux %s or newer)", n, need)
		return r
	}
	var parts []string
	for v, what := range missing {
		parts = append(parts, fmt.Sprintf("%s (Linux %s)", strings.Join(what, ", "), v))
	}
	sort.Strings(parts)
	r.Status = Fail
	r.Detail += " lacks " + strings.Join(parts, "; ")
	r.Fix = fmt.Sprintf("use Linux %s or newer (edgenf needs %s; docs/kernel.md lists what each NF needs)", worst, need)
	return r
}

// builtinRequirements merges the requirements of every built-in object.
func builtinRequirements() ([]datapath.Requirement, error) {
	seen := map[string]bool{}
	var out []datapath.Requirement
	objs := datapath.FrameworkObjects()
	for _, t := range cube.Types() {
		for _, h := range t.Hooks {
			if t.Object == nil {
				continue
			}
			if o, err := t.Object(h); err == nil {
				objs = append(objs, o)
			}
		}
	}
	for _, obj := range objs {
		spec, err := datapath.LoadSpec(obj)
		if err != nil {
			return nil, err
		}
		reqs, err := datapath.Requirements(spec)
		if err != nil {
			return nil, err
		}
		for _, q := range reqs {
			if !seen[q.String()] {
				seen[q.String()] = true
				out = append(out, q)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[j].Since.Less(out[i].Since) })
	return out, nil
}

func btf() Result {
	r := Result{Check: "btf"}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		r.Status, r.Detail = Warn, "no kernel BTF (/sys/kernel/btf/vmlinux): edgenf does not need it, bpftool and debugging tools do"
		r.Fix = "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian's and Ubuntu's are)"
		return r
	}
	r.Status, r.Detail = OK, "kernel BTF at /sys/kernel/btf/vmlinux"
	return r
}

func jit() Result {
	r := Result{Check: "jit"}
	b, err := os.ReadFile("/proc/sys/net/core/bpf_jit_enable")
	if err != nil {
		r.Status, r.Detail = Warn, "cannot read net.core.bpf_jit_enable: "+err.Error()
		return r
	}
	switch v := strings.TrimSpace(string(b)); v {
	case "1", "2":
		r.Status, r.Detail = OK, "eBPF JIT on (net.core.bpf_jit_enable="+v+")"
	default:
		r.Status, r.Detail = Fail, "eBPF JIT off (net.core.bpf_jit_enable="+v+"): programs run interpreted, many times slower"
		r.Fix = "sysctl -w net.core.bpf_jit_enable=1 (and net.core.bpf_jit_enable = 1 in /etc/sysctl.d/)"
	}
	return r
}

func bpffs(root string) Result {
	r := Result{Check: "bpffs"}
	dir := root
	for {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		dir = parent(dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && st.Type == unix.BPF_FS_MAGIC {
		r.Status, r.Detail = OK, fmt.Sprintf("%s is on a bpf filesystem (pins survive the daemon)", dir)
		return r
	}
	if strings.HasPrefix(root, "/sys/fs/bpf") {
		r.Status, r.Detail = Warn, "/sys/fs/bpf is not mounted: edgenfd mounts it when it starts"
		r.Fix = "mount -t bpf bpf /sys/fs/bpf (at boot: systemctl enable --now sys-fs-bpf.mount, which the edgenfd unit requires)"
		return r
	}
	r.Status, r.Detail = Fail, root+" is not on a bpf filesystem"
	r.Fix = "mount -t bpf bpf " + dir + ", or give edgenfd -bpffs a directory under /sys/fs/bpf"
	return r
}

func parent(p string) string {
	if i := strings.LastIndexByte(strings.TrimSuffix(p, "/"), '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

func tc(root bool) Result {
	r := Result{Check: "tc"}
	if !root {
		r.Status, r.Detail = Skip, needRoot
		return r
	}
	if err := datapath.HaveTCX(); err != nil {
		r.Status, r.Detail = Warn, fmt.Sprintf("no TCX (%v): TC programs attach the classic way (clsact qdisc, cls_bpf direct-action)", err)
		return r
	}
	r.Status, r.Detail = OK, "TCX links (Linux 6.6+); the classic way (clsact, cls_bpf) too with edgenfd -tc-attach classic"
	return r
}

// slicing: the egress shaping mechanism slicers pick when their settings
// name none, probed in a private network namespace (internal/nf/slicer/shaping).
func slicing(root bool) Result {
	r := Result{Check: "shaping"}
	if !root {
		r.Status, r.Detail = Skip, needRoot
		return r
	}
	q := shaping.Probe()
	mech, _, err := q.Pick(false)
	switch {
	case err != nil:
		r.Status, r.Detail = Warn, err.Error()+": slicers classify and police, but cannot shape egress"
	case mech == shaping.EDT && q.HTB:
		r.Status, r.Detail = OK, fmt.Sprintf("%s: slicers pace rate limits by EDT (skb->tstamp under fq); slices with guaranteed minimums or priorities get htb", q)
	case mech == shaping.EDT:
		r.Status, r.Detail = Warn, fmt.Sprintf("%s: slicers pace rate limits by EDT; slices with guaranteed minimums or priorities are refused", q)
	default:
		r.Status, r.Detail = OK, fmt.Sprintf("%s: slicers shape by htb (one class per slice, picked by skb->priority); EDT pacing needs sch_fq", q)
	}
	return r
}

// memlock: kernels before 5.11 charge eBPF memory to RLIMIT_MEMLOCK;
// later ones to the memory cgroup. Probed as cilium/ebpf's rlimit package
// does: a map created with the limit at zero.
func memlock(root bool) Result {
	r := Result{Check: "memlock"}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		r.Status, r.Detail = Skip, err.Error()
		return r
	}
	cur := "unlimited"
	if lim.Cur != unix.RLIM_INFINITY {
		cur = fmt.Sprintf("%d KiB", lim.Cur/1024)
	}
	if !root {
		r.Status, r.Detail = Skip, "limit "+cur+"; "+needRoot
		return r
	}
	zero := unix.Rlimit{Cur: 0, Max: lim.Max}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &zero); err != nil {
		r.Status, r.Detail = Skip, err.Error()
		return r
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	unix.Setrlimit(unix.RLIMIT_MEMLOCK, &lim)
	if err == nil {
		m.Close()
		r.Status, r.Detail = OK, "not needed: the kernel charges eBPF memory to the memory cgroup (limit "+cur+")"
		return r
	}
	if lim.Cur == unix.RLIM_INFINITY || lim.Max == unix.RLIM_INFINITY {
		r.Status, r.Detail = OK, "the kernel charges eBPF memory to RLIMIT_MEMLOCK (before Linux 5.11); edgenfd raises its own limit to unlimited (hard limit "+hard(lim)+")"
		return r
	}
	r.Status, r.Detail = Fail, "the kernel charges eBPF memory to RLIMIT_MEMLOCK (before Linux 5.11) and the hard limit is "+hard(lim)
	r.Fix = "LimitMEMLOCK=infinity in the edgenfd unit (the packaged one has it), or ulimit -l unlimited before starting edgenfd"
	return r
}

func hard(l unix.Rlimit) string {
	if l.Max == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return fmt.Sprintf("%d KiB", l.Max/1024)
}

func clang() Result {
	r := Result{Check: "clang"}
	c := bpf.Clang()
	path, err := exec.LookPath(c)
	if err != nil {
		r.Status, r.Detail = Warn, "no clang: P4 programs cannot be compiled (the built-in NFs need none)"
		r.Fix = "apt-get install clang (or set EDGENF_CLANG to a clang 14 or newer)"
		return r
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		r.Status, r.Detail = Fail, fmt.Sprintf("%s --version: %v", path, err)
		r.Fix = "reinstall clang (apt-get install --reinstall clang)"
		return r
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if _, err := exec.LookPath("bwrap"); err != nil {
		r.Status, r.Detail = Warn, fmt.Sprintf("%s (%s), but no bubblewrap: the P4 preprocessor runs confined by it, so P4 programs cannot be compiled", path, strings.TrimSpace(first))
		r.Fix = "apt-get install bubblewrap"
		return r
	}
	r.Status, r.Detail = OK, fmt.Sprintf("%s (%s) and bubblewrap compile P4 programs", path, strings.TrimSpace(first))
	return r
}

func daemon(ping func() (string, error)) Result {
	r := Result{Check: "daemon"}
	d, err := ping()
	if err != nil {
		r.Status, r.Detail = Fail, "edgenfd does not answer: "+err.Error()
		r.Fix = "systemctl start edgenfd (or run edgenfd; its log says why it stopped: journalctl -u edgenfd)"
		return r
	}
	r.Status, r.Detail = OK, "edgenfd answers: "+d
	return r
}

// Interfaces are the Linux interfaces a topology document uses: port peers
// that are not cube ports, and attachment points that are interfaces.
func Interfaces(doc *cube.Document) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !strings.Contains(s, ":") && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, c := range doc.Cubes {
		for _, p := range c.Ports {
			add(p.Peer)
		}
	}
	for _, a := range doc.Attachments {
		add(a.Point)
	}
	sort.Strings(out)
	return out
}
