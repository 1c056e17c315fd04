package datapath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TC programs meet an interface in one of two ways. TCX (Linux 6.6) gives
// bpf links, pinned like XDP's. Older kernels (Debian 12's 6.1, Ubuntu
// 22.04's 5.15, RHEL 9's 5.14) have only the classic way, which Cilium uses
// too: a clsact qdisc with cls_bpf filters in direct-action mode, set up
// through netlink. Classic filters belong to the interface, so they outlive
// the daemon like pinned links do; the daemon knows its own by their name,
// which carries the datapath's tag, and by their fixed priorities: the copy
// machine before the stub, as at the head of TCX.

// TCAttach chooses how TC programs are attached.
type TCAttach string

const (
	// TCAttachAuto uses TCX where the kernel has it, the classic way
	// elsewhere.
	TCAttachAuto TCAttach = "auto"
	// TCAttachTCX requires TCX (Linux 6.6).
	TCAttachTCX TCAttach = "tcx"
	// TCAttachClassic uses clsact and cls_bpf whatever the kernel.
	TCAttachClassic TCAttach = "classic"
)

// TCAttachEnv holds the TCAttach of the datapaths this process opens
// (edgenfd -tc-attach sets it); auto when unset.
const TCAttachEnv = "EDGENF_TC_ATTACH"

// ParseTCAttach checks a TCAttach given by a user.
func ParseTCAttach(s string) (TCAttach, error) {
	switch a := TCAttach(s); a {
	case TCAttachAuto, TCAttachTCX, TCAttachClassic:
		return a, nil
	}
	return "", fmt.Errorf("TC attachment %q: want auto, tcx or classic", s)
}

// tcAttachFromEnv resolves $EDGENF_TC_ATTACH against what the kernel has:
// whether TC programs go on the classic way.
func tcAttachFromEnv() (bool, error) {
	a := TCAttachAuto
	if v := os.Getenv(TCAttachEnv); v != "" {
		var err error
		if a, err = ParseTCAttach(v); err != nil {
			return false, fmt.Errorf("$%s: %w", TCAttachEnv, err)
		}
	}
	switch a {
	case TCAttachClassic:
		return true, nil
	case TCAttachTCX:
		if err := HaveTCX(); err != nil {
			return false, fmt.Errorf("TC attachment tcx: %w; use classic (or auto)", err)
		}
		return false, nil
	}
	return HaveTCX() != nil, nil
}

// TCAttach reports how this datapath attaches TC programs: tcx or classic.
func (d *Datapath) TCAttach() TCAttach {
	if d.classicTC {
		return TCAttachClassic
	}
	return TCAttachTCX
}

var (
	tcxOnce sync.Once
	tcxErr  error
)

// HaveTCX reports (nil) whether the kernel attaches TC programs through TCX
// links, probing it as cilium/ebpf does: a link to an interface that cannot
// exist fails with ENODEV where TCX exists. Nothing is attached.
func HaveTCX() error {
	tcxOnce.Do(func() {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Type: ebpf.SchedCLS, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		})
		if err != nil {
			tcxErr = fmt.Errorf("probing TCX: %w", err)
			return
		}
		defer prog.Close()
		l, err := link.AttachTCX(link.TCXOptions{Program: prog, Interface: 0x7fffffff, Attach: ebpf.AttachTCXIngress})
		switch {
		case err == nil:
			l.Close()
		case errors.Is(err, ebpf.ErrNotSupported):
			tcxErr = fmt.Errorf("TCX needs Linux 6.6 (this kernel is %s)", KernelRelease())
		case !errors.Is(err, unix.ENODEV):
			tcxErr = fmt.Errorf("probing TCX: %w", err)
		}
	})
	return tcxErr
}

// KernelRelease is uname -r.
func KernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// tcRole is what a classic filter of ours does; its priority orders it
// among ours on the hook.
type tcRole struct {
	name string
	prio uint16
}

var (
	roleCopier = tcRole{"copier", 1}
	roleStub   = tcRole{"stub", 2} // the injector's program takes this place on its veth
)

// classicHandle is the handle of every classic filter of ours (one per
// priority).
const classicHandle = 1

// filterName marks a filter as this datapath's, in role.
func (d *Datapath) filterName(role tcRole) string {
	return fmt.Sprintf("edgenf-%s-%s", role.name, d.tag())
}

func clsactParent(dir Direction) uint32 {
	if dir == Egress {
		return netlink.HANDLE_MIN_EGRESS
	}
	return netlink.HANDLE_MIN_INGRESS
}

// classicFilter finds the filter in role's place on ifindex's hook: nil if
// the place is free, an error if another program than ours holds it.
func (d *Datapath) classicFilter(ifindex int, dir Direction, role tcRole) (*netlink.BpfFilter, error) {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return nil, fmt.Errorf("interface %d: %w", ifindex, err)
	}
	fs, err := netlink.FilterList(l, clsactParent(dir))
	if err != nil {
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) { // no clsact qdisc yet
			return nil, nil
		}
		return nil, fmt.Errorf("tc filters of %s: %w", l.Attrs().Name, err)
	}
	for _, f := range fs {
		a := f.Attrs()
		if a.Priority != role.prio || a.Handle != classicHandle {
			continue
		}
		bf, ok := f.(*netlink.BpfFilter)
		if !ok || bf.Name != d.filterName(role) {
			return nil, fmt.Errorf("%s already has a tc filter of another program at %s priority %d (tc filter show dev %[1]s %[2]s)",
				l.Attrs().Name, dir, role.prio)
		}
		return bf, nil
	}
	return nil, nil
}

// attachClassic puts prog in role's place on ifindex's clsact hook,
// replacing (atomically, for the packets) the program of ours already there.
func (d *Datapath) attachClassic(ifindex int, dir Direction, role tcRole, prog *ebpf.Program) error {
	qd := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: ifindex,
		Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}, QdiscType: "clsact"}
	if err := netlink.QdiscAdd(qd); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("clsact qdisc: %w", err)
	}
	if _, err := d.classicFilter(ifindex, dir, role); err != nil {
		return err
	}
	f := &netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{LinkIndex: ifindex, Parent: clsactParent(dir),
		Handle: classicHandle, Priority: role.prio, Protocol: unix.ETH_P_ALL},
		Fd: prog.FD(), Name: d.filterName(role), DirectAction: true}
	if err := netlink.FilterReplace(f); err != nil {
		return fmt.Errorf("tc filter (cls_bpf) at %s: %w", dir, err)
	}
	return nil
}

// detachClassic removes our filter in role's place on ifname's hook, if
// there (the interface may be gone, and its filters with it).
func (d *Datapath) detachClassic(ifname string, dir Direction, role tcRole) error {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return nil
	}
	f, err := d.classicFilter(l.Attrs().Index, dir, role)
	if err != nil || f == nil {
		return nil // not ours
	}
	if err := netlink.FilterDel(f); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove tc filter from %s: %w", ifname, err)
	}
	return nil
}

// attachStubClassic attaches a stub's program (prog: the stub, or a cube's
// direct entry) the classic way, as AttachStub does with a TCX link: a
// filter of ours already there runs the plain stub, which follows any hop,
// while the hop changes.
func (d *Datapath) attachStubClassic(s *Stub, ifindex int, stub, prog *ebpf.Program, hop Hop) error {
	cur, err := d.classicFilter(ifindex, s.Dir, roleStub)
	if err != nil {
		return err
	}
	if cur != nil {
		if err := d.attachClassic(ifindex, s.Dir, roleStub, stub); err != nil {
			return err
		}
	}
	if err := s.SetHop(hop); err != nil {
		return err
	}
	if cur == nil || prog != stub {
		if err := d.attachClassic(ifindex, s.Dir, roleStub, prog); err != nil {
			return err
		}
	}
	// a TCX link an earlier daemon (attaching the TCX way) left
	dropPinnedLink(filepath.Join(s.dir, linkPin))
	dropOwnMaps(s.dir)
	return nil
}

// detachStubClassic removes the classic filters a stub put on ifname: its
// own (TC) or the copy machine it came with (XDP).
func (d *Datapath) detachStubClassic(ifname string, hook Hook, dir Direction) error {
	if hook == TC {
		return d.detachClassic(ifname, dir, roleStub)
	}
	return d.detachClassic(ifname, Ingress, roleCopier)
}

// detachAllClassic removes the classic filters of every stub under the
// root (Destroy).
func (d *Datapath) detachAllClassic() error {
	ents, err := os.ReadDir(filepath.Join(d.root, "ifaces"))
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range ents {
		// <ifname, dots as colons>_<hook>_<direction> (stubDir)
		parts := strings.Split(e.Name(), "_")
		if len(parts) < 3 {
			continue
		}
		n := len(parts)
		ifname := strings.ReplaceAll(strings.Join(parts[:n-2], "_"), ":", ".")
		dir := Ingress
		if parts[n-1] == Egress.String() {
			dir = Egress
		}
		errs = append(errs, d.detachStubClassic(ifname, Hook(parts[n-2]), dir))
	}
	return errors.Join(errs...)
}

func dropPinnedLink(path string) {
	if l, err := link.LoadPinnedLink(path, nil); err == nil {
		l.Unpin()
		l.Close()
	}
}
