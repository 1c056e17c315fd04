package datapath

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// PrepareRedirectTarget is EnsureRedirectTarget for code that has no
// *Datapath (NF controllers redirecting to an interface named in their
// settings, e.g. the ddos mirror): if ifindex is a veth whose far end runs no
// XDP program, an XDP pass-through is attached there. The program is not
// pinned; it lives as long as the interface.
func PrepareRedirectTarget(ifindex int) error {
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
	spec, err := LoadSpec(stubXDP)
	if err != nil {
		return err
	}
	ps := spec.Programs["edgenf_xdp_pass"]
	if ps == nil {
		return fmt.Errorf("stub object lacks edgenf_xdp_pass")
	}
	return inNS(ns, func() error {
		peer, err := netlink.LinkByIndex(peerIdx)
		if err != nil {
			return fmt.Errorf("peer of %s: %w", veth.Name, err)
		}
		if x := peer.Attrs().Xdp; x != nil && x.Attached {
			return nil
		}
		prog, err := ebpf.NewProgram(ps)
		if err != nil {
			return err
		}
		defer prog.Close()
		if err := netlink.LinkSetXdpFdWithFlags(peer, prog.FD(), nl.XDP_FLAGS_DRV_MODE); err != nil {
			return fmt.Errorf("XDP pass-through on %s (peer of %s): %w", peer.Attrs().Name, veth.Name, err)
		}
		return nil
	})
}
