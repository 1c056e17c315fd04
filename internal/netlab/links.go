package netlab

import (
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
)

// Links: veth pairs between a host and the root namespace, or between two
// hosts, brought up and addressed.

// root-side link name.
func (l *Lab) Veth(h *Host, inner, outer string, addrs ...string) (string, error) {
	return l.VethQ(h, inner, outer, 0, addrs...)
}

// VethQ is Veth with queues RX and TX queues on each end (0: default).
func (l *Lab) VethQ(h *Host, inner, outer string, queues int, addrs ...string) (string, error) {
	rootName, err := l.checkName(outer)
	if err != nil {
		return "", err
	}
	if len(inner) == 0 || len(inner) > 15 {
		return "", fmt.Errorf("netlab: bad interface name %q", inner)
	}
	v := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: rootName},
		PeerName:      inner,
		PeerNamespace: netlink.NsFd(int(h.ns)),
	}
	if queues > 0 {
		v.NumTxQueues, v.NumRxQueues = queues, queues
		v.PeerNumTxQueues, v.PeerNumRxQueues = uint32(queues), uint32(queues)
	}
	if err := netlink.LinkAdd(v); err != nil {
		return "", fmt.Errorf("netlab: veth %s <-> %s/%s: %w", rootName, h.Name, inner, err)
	}
	l.trackRoot(rootName)
	if err := rootUp(rootName); err != nil {
		return "", err
	}
	if err := h.setupEnd(inner, addrs); err != nil {
		return "", err
	}
	if err := waitUp(nil, rootName); err != nil {
		return "", err
	}
	if err := waitUp(h.nl, inner); err != nil {
		return "", fmt.Errorf("%s: %w", h.Name, err)
	}
	return rootName, nil
}

// RootVeth makes a veth pair with both ends (l.Name(a), l.Name(b)) in the
// root namespace, both up.
func (l *Lab) RootVeth(a, b string) (string, string, error) {
	return l.RootVethQ(a, b, 0)
}

// RootVethQ is RootVeth with queues RX and TX queues on each end (0: the
// kernel default, 1). With several queues, XDP redirects from several CPUs
// into the pair use one ring per CPU.
func (l *Lab) RootVethQ(a, b string, queues int) (string, string, error) {
	na, err := l.checkName(a)
	if err != nil {
		return "", "", err
	}
	nb, err := l.checkName(b)
	if err != nil {
		return "", "", err
	}
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: na}, PeerName: nb}
	if queues > 0 {
		v.NumTxQueues, v.NumRxQueues = queues, queues
		v.PeerNumTxQueues, v.PeerNumRxQueues = uint32(queues), uint32(queues)
	}
	if err := netlink.LinkAdd(v); err != nil {
		return "", "", fmt.Errorf("netlab: veth %s <-> %s: %w", na, nb, err)
	}
	l.trackRoot(na)
	for _, n := range []string{na, nb} {
		if err := rootUp(n); err != nil {
			return "", "", err
		}
	}
	for _, n := range []string{na, nb} {
		if err := waitUp(nil, n); err != nil {
			return "", "", err
		}
	}
	return na, nb, nil
}

// Link makes a veth pair directly between two hosts: ifa in a, ifb in b, both
// up, with the given addresses.
func (l *Lab) Link(a *Host, ifa string, b *Host, ifb string, addrsA, addrsB []string) error {
	if len(ifa) == 0 || len(ifa) > 15 || len(ifb) == 0 || len(ifb) > 15 {
		return fmt.Errorf("netlab: bad interface names %q, %q", ifa, ifb)
	}
	v := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: ifa, Namespace: netlink.NsFd(int(a.ns))},
		PeerName:      ifb,
		PeerNamespace: netlink.NsFd(int(b.ns)),
	}
	if err := netlink.LinkAdd(v); err != nil {
		return fmt.Errorf("netlab: veth %s/%s <-> %s/%s: %w", a.Name, ifa, b.Name, ifb, err)
	}
	if err := a.setupEnd(ifa, addrsA); err != nil {
		return err
	}
	if err := b.setupEnd(ifb, addrsB); err != nil {
		return err
	}
	if err := waitUp(a.nl, ifa); err != nil {
		return fmt.Errorf("%s: %w", a.Name, err)
	}
	if err := waitUp(b.nl, ifb); err != nil {
		return fmt.Errorf("%s: %w", b.Name, err)
	}
	return nil
}

// waitUp waits (at most 5 s) until link name reports operational state up.
// The kernel attaches a link's queueing discipline in the same deferred
// work (linkwatch, rate-limited, slow when many links change at once) that
// sets the operational state; until then every packet sent on the link is
// dropped. nl nil: the root namespace.
func waitUp(nl *netlink.Handle, name string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var lk netlink.Link
		var err error
		if nl == nil {
			lk, err = netlink.LinkByName(name)
		} else {
			lk, err = nl.LinkByName(name)
		}
		if err != nil {
			return fmt.Errorf("netlab: %s: %w", name, err)
		}
		if lk.Attrs().OperState == netlink.OperUp {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netlab: %s not operationally up after 5 s (state %s)", name, lk.Attrs().OperState)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *Host) setupEnd(dev string, addrs []string) error {
	lk, err := h.nl.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("netlab: %s: %s: %w", h.Name, dev, err)
	}
	if err := addAddrs(h.nl, lk, addrs); err != nil {
		return err
	}
	if err := h.nl.LinkSetUp(lk); err != nil {
		return fmt.Errorf("netlab: %s: %s up: %w", h.Name, dev, err)
	}
	return nil
}

func (l *Lab) trackRoot(name string) {
	l.mu.Lock()
	l.rootLinks = append(l.rootLinks, name)
	l.mu.Unlock()
}

func rootUp(name string) error {
	lk, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("netlab: %s: %w", name, err)
	}
	// Root-side ends carry only the test's traffic: with IPv6 on, the root
	// namespace would send MLD reports and router solicitations out of them,
	// and a cube port between two root ends would count those packets.
	// Best effort: IPv6 may be disabled system-wide.
	_ = writeSysctl("net/ipv6/conf/"+name+"/disable_ipv6", "1")
	if err := netlink.LinkSetUp(lk); err != nil {
		return fmt.Errorf("netlab: %s up: %w", name, err)
	}
	return nil
}

// Close removes every link and namespace the lab created. It is idempotent
