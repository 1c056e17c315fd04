package datapath

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
)

// EnsureRedirectTarget prepares ifindex to receive XDP-redirected frames. A
// veth delivers them only when its far end runs an XDP program, so if that end
// has none, a pass-through program is attached there (in whatever namespace it
// lives). Other devices need nothing.
func (d *Datapath) EnsureRedirectTarget(ifindex int) error {
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
	prog, err := d.xdpPass()
	if err != nil {
		return err
	}
	defer prog.Close()
	return inNS(ns, func() error {
		peer, err := netlink.LinkByIndex(peerIdx)
		if err != nil {
			return fmt.Errorf("peer of %s: %w", veth.Name, err)
		}
		if x := peer.Attrs().Xdp; x != nil && x.Attached {
			return nil
		}
		// Attached through netlink, not a bpf link: it must outlive the
		// daemon and belongs to the interface (it goes away with it).
		if err := netlink.LinkSetXdpFdWithFlags(peer, prog.FD(), nl.XDP_FLAGS_DRV_MODE); err != nil {
			return fmt.Errorf("XDP pass-through on %s (peer of %s): %w", peer.Attrs().Name, veth.Name, err)
		}
		return nil
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
// one) among named namespaces and those of running processes.
func nsForID(nsid int) (netns.NsHandle, error) {
	if nsid < 0 {
		return netns.Get()
	}
	candidates, _ := filepath.Glob("/run/netns/*")
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for _, path := range append(candidates, procs...) {
		ns, err := netns.GetFromPath(path)
		if err != nil {
			continue
		}
		if id, err := netlink.GetNetNsIdByFd(int(ns)); err == nil && id == nsid {
			return ns, nil
		}
		ns.Close()
	}
	return netns.None(), fmt.Errorf("no namespace with id %d found: %w", nsid, os.ErrNotExist)
}

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
