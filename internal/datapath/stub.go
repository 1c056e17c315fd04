package datapath

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

var (
	//go:embed bpf/stub_xdp.o
	stubXDP []byte
	//go:embed bpf/stub_tc.o
	stubTC []byte
)

const linkPin = "link"

// Stub is the framework program on one direction of a Linux interface: it
// starts the hop of frames entering (or, TC only, leaving) the interface.
// The program is shared (ifaces.go); the interface's own part is its slot.
type Stub struct {
	Ifname  string
	Hook    Hook
	Dir     Direction
	dir     string
	set     *ifaceSet
	slot    uint32
	ifindex uint32
	// Reset: pinned maps of an earlier release this attach replaced,
	// their layout changed (stubupgrade.go)
	Reset []MapReset
	// Adopted: the interface already ran what this attach would have put
	// there (stubadopt.go); only its hop was written.
	Adopted bool
}

func (d *Datapath) stubDir(ifname string, hook Hook, dir Direction) string {
	return stubDirAt(d.root, ifname, hook, dir)
}

func stubDirAt(root, ifname string, hook Hook, dir Direction) string {
	// bpffs names cannot contain dots; interface names (eth0.100) can, and
	// can never contain colons.
	name := strings.ReplaceAll(ifname, ".", ":")
	return filepath.Join(root, "ifaces", fmt.Sprintf("%s_%s_%s", name, hook, dir))
}

// AttachedProgram opens the program a datapath under root runs on an
// interface (its stub, or the direct entry of the cube its hop starts
// with), for measurements with BPF_PROG_TEST_RUN. The caller closes it.
func AttachedProgram(root, ifname string, hook Hook, dir Direction) (*ebpf.Program, error) {
	l, err := link.LoadPinnedLink(filepath.Join(stubDirAt(root, ifname, hook, dir), "link"), nil)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		return nil, err
	}
	return ebpf.NewProgramFromID(info.Program)
}

// AttachStub makes frames on ifindex take hop. With direct, the cube the hop
// starts with, the interface runs that cube's direct entry instead of the
// stub program (see HasEntry); the caller must pass it only for such hops.
// Re-attaching an attached stub replaces its program atomically: the plain
// stub runs while the hop changes, so program and hop always agree. The link
// is pinned, so the stub stays when the daemon exits.
func (d *Datapath) AttachStub(ifname string, ifindex int, hook Hook, dir Direction, hop Hop, direct *Program) (_ *Stub, err error) {
	if hook == XDP && dir == Egress {
		return nil, errors.New("XDP has no egress hook: use hook tc for egress processing")
	}
	if ifindex <= 0 {
		return nil, fmt.Errorf("interface %s: no ifindex", ifname)
	}
	sdir := d.stubDir(ifname, hook, dir)
	defer d.lockStubDir(sdir)()
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		return nil, err
	}
	set, err := d.ifaceSet(hook, dir)
	if err != nil {
		return nil, fmt.Errorf("stub for %s: %w", ifname, err)
	}
	s := &Stub{Ifname: ifname, Hook: hook, Dir: dir, dir: sdir, set: set, ifindex: uint32(ifindex), Reset: set.takeReset()}
	if !(hook == TC && d.classicTC) {
		adopted, err := d.adoptStub(s, ifindex, hop, direct)
		if err != nil || adopted {
			return s, err
		}
	}
	prog := set.stub
	if direct != nil {
		if prog, err = d.entry(set, direct); err != nil {
			return nil, err
		}
	}
	if hook == XDP {
		// copies the XDP programs record are made behind them (copier.go)
		if err := d.attachCopier(sdir, ifindex); err != nil {
			return nil, fmt.Errorf("%s: %w", ifname, err)
		}
	}
	fresh, err := s.takeSlot()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ifname, err)
	}
	// A slot this attach took is given back if a later step fails (the
	// link, its pin, the record): else it stays taken, and the ifindex
	// written, until the next start. A slot the interface held already
	// stays with the program still running on it.
	defer func() {
		if err != nil && fresh {
			s.release()
		}
	}()
	if hook == TC && d.classicTC {
		if err := d.attachStubClassic(s, ifindex, set.stub, prog, hop); err != nil {
			return nil, fmt.Errorf("attach to %s: %w", ifname, err)
		}
		return s, recordAttached(sdir, s.record(hook, direct, prog))
	}
	if err := clearAttached(sdir); err != nil {
		return nil, err
	}
	record := s.record(hook, direct, prog)
	lpath := filepath.Join(sdir, linkPin)
	if l, err := link.LoadPinnedLink(lpath, nil); err == nil && !linkedTo(l, ifindex) {
		// the link of an interface of the same name that is gone (a
		// pod's veth deleted while the daemon was down, then made
		// again): the kernel severed it with its interface
		l.Unpin()
		l.Close()
	} else if err == nil {
		defer l.Close()
		if err := s.replace(l, prog, hop); err != nil {
			return nil, fmt.Errorf("%s: %w", ifname, err)
		}
		dropOwnMaps(sdir)
		// unrecorded, the next start attaches again: no worse
		recordAttached(sdir, record)
		return s, nil
	}
	if err := s.SetHop(hop); err != nil {
		s.release()
		return nil, err
	}
	l, err := attach(prog, ifindex, hook, dir)
	if err != nil {
		s.release()
		d.detachCopier(sdir)
		os.RemoveAll(sdir)
		return nil, fmt.Errorf("attach to %s: %w", ifname, err)
	}
	defer l.Close() // unpinned, the link goes with the last descriptor
	if err := l.Pin(lpath); err != nil {
		s.release()
		d.detachCopier(sdir)
		return nil, fmt.Errorf("pin the link on %s: %w", ifname, err)
	}
	if hook == TC { // a classic filter an earlier daemon left
		d.detachStubClassic(ifname, hook, dir)
	}
	dropOwnMaps(sdir)
	recordAttached(sdir, record)
	return s, nil
}

// takeSlot gives s its interface's slot: the one its record names if that
// slot is still written for this interface, else a free one (the slot of
// an interface of the same name that is gone is freed); fresh: the latter.
func (s *Stub) takeSlot() (fresh bool, err error) {
	if s.slot != 0 {
		return false, nil
	}
	if r, ok := readAttached(s.dir); ok && r.Slot != 0 {
		if r.Ifindex == s.ifindex && s.set.holds(r.Slot, s.ifindex) {
			s.slot = r.Slot
			return false, nil
		}
		if s.set.holds(r.Slot, r.Ifindex) {
			if err := s.set.free(r.Slot, r.Ifindex); err != nil {
				return false, err
			}
		}
	}
	slot, err := s.set.take()
	if err != nil {
		return false, err
	}
	s.slot = slot
	return true, nil
}

// release frees the slot of an attach that failed.
func (s *Stub) release() {
	if s.slot != 0 {
		s.set.free(s.slot, s.ifindex)
		s.slot = 0
	}
}

// dropOwnMaps removes the hop and counters an earlier release's stub
// pinned beside its link, one stub program per interface then: the link
// no longer runs it.
func dropOwnMaps(sdir string) {
	os.Remove(filepath.Join(sdir, MapPorts))
	os.Remove(filepath.Join(sdir, MapStats))
}

// linkedTo says whether a pinned XDP or TCX link is attached to interface
// ifindex (a severed link's interface is 0).
func linkedTo(l link.Link, ifindex int) bool {
	info, err := l.Info()
	if err != nil {
		return false
	}
	if x := info.XDP(); x != nil {
		return int(x.Ifindex) == ifindex
	}
	if x := info.TCX(); x != nil {
		return int(x.Ifindex) == ifindex
	}
	return false
}

// replace switches an attached link to prog with hop. A direct entry
// serves only hops that start with its cube, so a link that runs one goes
// to the plain stub, which follows any hop, while the hop changes; a link
// that runs the stub, or a program over other maps (an earlier release's),
// takes the hop first.
func (s *Stub) replace(l link.Link, prog *ebpf.Program, hop Hop) error {
	info, err := l.Info()
	if err != nil {
		return fmt.Errorf("link: %w", err)
	}
	runs := uint32(info.Program)
	if s.set.isEntry(runs) {
		if err := l.Update(s.set.stub); err != nil {
			return fmt.Errorf("update link: %w", err)
		}
		runs = progID(s.set.stub)
	}
	if err := s.SetHop(hop); err != nil {
		return err
	}
	if runs == progID(prog) {
		return nil
	}
	if err := l.Update(prog); err != nil {
		return fmt.Errorf("update link: %w", err)
	}
	return nil
}

func attach(p *ebpf.Program, ifindex int, hook Hook, dir Direction) (link.Link, error) {
	if hook == XDP {
		l, err := link.AttachXDP(link.XDPOptions{Program: p, Interface: ifindex, Flags: link.XDPDriverMode})
		if err != nil && dropXDPPass(ifindex) {
			l, err = link.AttachXDP(link.XDPOptions{Program: p, Interface: ifindex, Flags: link.XDPDriverMode})
		}
		if err != nil {
			// Devices without native XDP (rare: veth, physical NICs have it)
			// still work in generic mode, slower.
			l, err2 := link.AttachXDP(link.XDPOptions{Program: p, Interface: ifindex, Flags: link.XDPGenericMode})
			if err2 != nil {
				return nil, err
			}
			return l, nil
		}
		return l, nil
	}
	at := ebpf.AttachTCXIngress
	if dir == Egress {
		at = ebpf.AttachTCXEgress
	}
	return link.AttachTCX(link.TCXOptions{Program: p, Interface: ifindex, Attach: at})
}

// Ifindex is the interface index the stub was attached by: the name may
// have moved on to another interface since (moved to another namespace,
// deleted and made again).
func (s *Stub) Ifindex() int { return int(s.ifindex) }

// SetHop changes where the stub sends frames.
func (s *Stub) SetHop(h Hop) error { return s.set.write(s.slot, s.ifindex, h) }

// Stats counts the frames the stub has taken into the framework.
func (s *Stub) Stats() (Stats, error) {
	var percpu []Stats
	if err := s.set.maps[mapIfStats].Lookup(s.slot, &percpu); err != nil {
		return Stats{}, err
	}
	var st Stats
	for _, c := range percpu {
		st.Add(c)
	}
	return st, nil
}

// DetachStub removes the stub from the interface (if still there) and its pins.
// PrepareXDPStub does ahead, outside any change, the slow parts of putting
// an XDP stub on a new interface that depend on nothing a change decides:
// the far end's checksum setting (EnsureXDPIngress) and the copy machine
// first at TCX ingress (each attachment waits for the kernel's RCU grace
// period). AttachStub then finds them done, so changes that plug pods in
// hold the engine for less, and several pods' preparations run at once.
// UnprepareStub undoes it when no stub follows.
func (d *Datapath) PrepareXDPStub(ifname string, ifindex int) error {
	if err := d.EnsureXDPIngress(ifindex); err != nil {
		return err
	}
	sdir := d.stubDir(ifname, XDP, Ingress)
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		return err
	}
	return d.attachCopier(sdir, ifindex)
}

// UnprepareStub removes what PrepareXDPStub made if no stub is attached.
func (d *Datapath) UnprepareStub(ifname string) {
	sdir := d.stubDir(ifname, XDP, Ingress)
	if _, err := os.Stat(filepath.Join(sdir, linkPin)); err == nil {
		return
	}
	d.detachCopier(sdir)
	os.RemoveAll(sdir)
}

func (d *Datapath) DetachStub(ifname string, hook Hook, dir Direction) error {
	sdir := d.stubDir(ifname, hook, dir)
	defer d.lockStubDir(sdir)()
	lpath := filepath.Join(sdir, linkPin)
	if l, err := link.LoadPinnedLink(lpath, nil); err == nil {
		l.Unpin()
		l.Close()
	}
	if err := d.freeSlot(sdir, hook, dir); err != nil {
		return err
	}
	d.detachCopier(sdir)
	if err := d.detachStubClassic(ifname, hook, dir); err != nil {
		return err
	}
	return os.RemoveAll(sdir)
}
