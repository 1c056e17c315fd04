package datapath

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// EnsureRedirectTarget prepares ifindex to receive XDP-redirected frames. A
// veth delivers them only when its far end runs an XDP program, so if that end
// has none, a pass-through program is attached there (in whatever namespace it
// lives). Other devices need nothing.
func (d *Datapath) EnsureRedirectTarget(ifindex int) error {
	prog, err := d.xdpPass()
	if err != nil {
		return err
	}
	defer prog.Close()
	return d.onVethPeer(ifindex, func(peer netlink.Link) error {
		if x := peer.Attrs().Xdp; x != nil && x.Attached {
			return nil
		}
		// Attached through netlink, not a bpf link: it must outlive the
		// daemon and belongs to the interface (it goes away with it).
		if err := netlink.LinkSetXdpFdWithFlags(peer, prog.FD(), nl.XDP_FLAGS_DRV_MODE); err != nil {
			return fmt.Errorf("XDP pass-through on %s: %w", peer.Attrs().Name, err)
		}
		return nil
	})
}

// onVethPeer runs fn, inside its namespace, on the far end of ifindex if that
// is a veth; other devices are left alone.
func (d *Datapath) onVethPeer(ifindex int, fn func(peer netlink.Link) error) error {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return fmt.Errorf("interface %d: %w", ifindex, err)
	}
	veth, ok := l.(*netlink.Veth)
	if !ok {
		return nil
	}
	peerIdx, err := netlink.VethPeerIndex(veth)
	if err != nil {
		return fmt.Errorf("veth %s peer: %w", veth.Name, err)
	}
	ns, err := nsForID(veth.Attrs().NetNsID)
	if err != nil {
		return fmt.Errorf("namespace of the peer of %s: %w", veth.Name, err)
	}
	defer ns.Close()
	return inNS(ns, func() error {
		peer, err := netlink.LinkByIndex(peerIdx)
		if err != nil {
			return fmt.Errorf("peer of %s: %w", veth.Name, err)
		}
		return fn(peer)
	})
}

// xdpPass returns the pinned pass-through program, loading it once.
func (d *Datapath) xdpPass() (*ebpf.Program, error) {
	path := filepath.Join(d.root, "xdp_pass")
	if p, err := ebpf.LoadPinnedProgram(path, nil); err == nil {
		return p, nil
	}
	spec, err := LoadSpec(stubXDP)
	if err != nil {
		return nil, err
	}
	ps := spec.Programs["edgenf_xdp_pass"]
	if ps == nil {
		return nil, fmt.Errorf("stub object lacks edgenf_xdp_pass")
	}
	p, err := ebpf.NewProgram(ps)
	if err != nil {
		return nil, err
	}
	if err := p.Pin(path); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// nsForID finds the namespace the current one knows as nsid (-1: the current
// one) among named namespaces and those of running processes. The path
// last found for an id is tried first (ids are stable while a namespace
// lives; a reused id is caught by the check), and processes are searched
// only when no named namespace matches: a node with many pods asks this for
// every pod interface, and /proc holds thousands of entries.
func nsForID(nsid int) (netns.NsHandle, error) {
	if nsid < 0 {
		return netns.Get()
	}
	match := func(path string) (netns.NsHandle, bool) {
		ns, err := netns.GetFromPath(path)
		if err != nil {
			return ns, false
		}
		if id, err := netlink.GetNetNsIdByFd(int(ns)); err == nil && id == nsid {
			return ns, true
		}
		ns.Close()
		return netns.None(), false
	}
	nsPaths.Lock()
	cached := nsPaths.byID[nsid]
	nsPaths.Unlock()
	if cached != "" {
		if ns, ok := match(cached); ok {
			return ns, nil
		}
	}
	for _, glob := range []string{"/run/netns/*", "/proc/[0-9]*/ns/net"} {
		paths, _ := filepath.Glob(glob)
		for _, path := range paths {
			if ns, ok := match(path); ok {
				nsPaths.Lock()
				if len(nsPaths.byID) >= 4096 {
					clear(nsPaths.byID)
				}
				nsPaths.byID[nsid] = path
				nsPaths.Unlock()
				return ns, nil
			}
		}
	}
	return netns.None(), fmt.Errorf("no namespace with id %d found: %w", nsid, os.ErrNotExist)
}

// nsPaths remembers where the namespace of an id was found.
var nsPaths = struct {
	sync.Mutex
	byID map[int]string
}{byID: map[int]string{}}

// inNS runs fn on an OS thread switched into ns. If the thread cannot be
// switched back it is left locked, so Go retires it.
func inNS(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		err = fn()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// EnsureXDPIngress prepares a veth that an XDP stub receives on: the far end
// must compute checksums itself. With TX checksum offload the host's stack
// hands veth frames whose L4 checksum is still to be filled in
// (CHECKSUM_PARTIAL); once XDP turns them into raw frames nothing fills it in,
// and the receiver drops them (ICMP works, UDP and TCP do not).
func (d *Datapath) EnsureXDPIngress(ifindex int) error {
	return d.onVethPeer(ifindex, func(peer netlink.Link) error {
		if err := setTxChecksum(peer.Attrs().Name, false); err != nil {
			return fmt.Errorf("turn off TX checksum offload on %s: %w", peer.Attrs().Name, err)
		}
		return nil
	})
}

// setTxChecksum switches a device's TX checksum offload (ethtool -K dev tx).
func setTxChecksum(dev string, on bool) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	const ethtoolSTXCSUM = 0x17
	val := struct{ cmd, data uint32 }{cmd: ethtoolSTXCSUM}
	if on {
		val.data = 1
	}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:], dev)
	ifr.data = uintptr(unsafe.Pointer(&val))
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return errno
	}
	return nil
}
