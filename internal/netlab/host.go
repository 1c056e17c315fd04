package netlab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Hosts: the network namespaces of a lab, and what a test does inside one
// (run code, sysctls, addresses, routes, neighbours).

const netnsDir = "/var/run/netns"

// Host is a network namespace owned by a Lab.
type Host struct {
	Name string // netns name, "<prefix>-<name>"

	lab *Lab
	ns  netns.NsHandle
	nl  *netlink.Handle
}

// Host creates namespace "<prefix>-<name>" with the loopback up and IPv6
// duplicate address detection disabled for every interface created in it.
func (l *Lab) Host(name string) (*Host, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errors.New("netlab: lab closed")
	}
	l.mu.Unlock()
	if name == "" || strings.ContainsAny(name, "/ ") {
		return nil, fmt.Errorf("netlab: bad host name %q", name)
	}
	full := l.prefix + "-" + name
	ns, err := newNamedNS(full)
	if err != nil {
		return nil, fmt.Errorf("netlab: create netns %s: %w", full, err)
	}
	h := &Host{Name: full, lab: l, ns: ns}
	l.mu.Lock()
	l.hosts = append(l.hosts, h)
	l.mu.Unlock()

	h.nl, err = netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlab: netlink handle in %s: %w", full, err)
	}
	lo, err := h.nl.LinkByName("lo")
	if err != nil {
		return nil, fmt.Errorf("netlab: %s: lo: %w", full, err)
	}
	if err := h.nl.LinkSetUp(lo); err != nil {
		return nil, fmt.Errorf("netlab: %s: lo up: %w", full, err)
	}
	for _, k := range []string{"net/ipv6/conf/all/accept_dad", "net/ipv6/conf/default/accept_dad"} {
		if err := h.Sysctl(k, "0"); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// newNamedNS creates a named namespace without leaving the calling thread in it.
func newNamedNS(name string) (netns.NsHandle, error) {
	type res struct {
		ns  netns.NsHandle
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is never unlocked: when this goroutine exits, the Go
		// runtime destroys the thread, together with its namespace.
		ns, err := netns.NewNamed(name)
		ch <- res{ns, err}
	}()
	r := <-ch
	return r.ns, r.err
}

// Do runs fn on a locked OS thread switched into the host's namespace. Sockets
// created by fn stay in the namespace after fn returns, and may be used from
// any goroutine. Goroutines started by fn do NOT run in the namespace.
func (h *Host) Do(fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			ch <- fmt.Errorf("netlab: get netns: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(h.ns); err != nil {
			ch <- fmt.Errorf("netlab: enter %s: %w", h.Name, err)
			return
		}
		var ferr error
		func() {
			defer func() {
				if r := recover(); r != nil {
					ferr = fmt.Errorf("netlab: panic in %s: %v", h.Name, r)
				}
			}()
			ferr = fn()
		}()
		// Only hand the thread back to the scheduler if it is back home;
		// otherwise it dies with this goroutine.
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		ch <- ferr
	}()
	return <-ch
}

// Netlink returns a netlink handle working inside the host's namespace.
func (h *Host) Netlink() *netlink.Handle { return h.nl }

// NsHandle returns the namespace handle (owned by the host; don't close it).
func (h *Host) NsHandle() netns.NsHandle { return h.ns }

// Sysctl writes value to /proc/sys/<key> inside the namespace (key with '/'
// or '.' separators, e.g. "net/ipv4/ip_forward" or "net.ipv4.ip_forward").
func (h *Host) Sysctl(key, value string) error {
	return h.Do(func() error { return writeSysctl(key, value) })
}

func writeSysctl(key, value string) error {
	if !strings.Contains(key, "/") {
		key = strings.ReplaceAll(key, ".", "/")
	}
	p := filepath.Join("/proc/sys", key)
	if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
		return fmt.Errorf("netlab: sysctl %s=%s: %w", key, value, err)
	}
	return nil
}

// IfIndex returns the index of dev inside the host.
func (h *Host) IfIndex(dev string) (int, error) {
	lk, err := h.nl.LinkByName(dev)
	if err != nil {
		return 0, fmt.Errorf("netlab: %s: %s: %w", h.Name, dev, err)
	}
	return lk.Attrs().Index, nil
}

// MAC returns the hardware address of dev inside the host.
func (h *Host) MAC(dev string) (net.HardwareAddr, error) {
	lk, err := h.nl.LinkByName(dev)
	if err != nil {
		return nil, fmt.Errorf("netlab: %s: %s: %w", h.Name, dev, err)
	}
	return lk.Attrs().HardwareAddr, nil
}

// AddAddr adds addresses (CIDR notation, v4 or v6; v6 without DAD) to dev.
func (h *Host) AddAddr(dev string, addrs ...string) error {
	lk, err := h.nl.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("netlab: %s: %s: %w", h.Name, dev, err)
	}
	return addAddrs(h.nl, lk, addrs)
}

func addAddrs(nl *netlink.Handle, lk netlink.Link, addrs []string) error {
	for _, a := range addrs {
		ad, err := netlink.ParseAddr(a)
		if err != nil {
			return fmt.Errorf("netlab: address %q: %w", a, err)
		}
		if ad.IP.To4() == nil {
			ad.Flags |= unix.IFA_F_NODAD
		}
		if err := nl.AddrAdd(lk, ad); err != nil {
			return fmt.Errorf("netlab: add %s to %s: %w", a, lk.Attrs().Name, err)
		}
	}
	return nil
}

// AddRoute adds a route to dst ("default" or a CIDR) via gateway gw.
func (h *Host) AddRoute(dst, gw string) error {
	gwIP := net.ParseIP(gw)
	if gwIP == nil {
		return fmt.Errorf("netlab: bad gateway %q", gw)
	}
	r := &netlink.Route{Gw: gwIP}
	if dst == "default" || dst == "" {
		if gwIP.To4() != nil {
			_, r.Dst, _ = net.ParseCIDR("0.0.0.0/0")
		} else {
			_, r.Dst, _ = net.ParseCIDR("::/0")
		}
	} else {
		_, n, err := net.ParseCIDR(dst)
		if err != nil {
			return fmt.Errorf("netlab: bad route destination %q: %w", dst, err)
		}
		r.Dst = n
	}
	if err := h.nl.RouteAdd(r); err != nil {
		return fmt.Errorf("netlab: %s: route %s via %s: %w", h.Name, dst, gw, err)
	}
	return nil
}

// SetNeigh installs a permanent neighbour entry ip → mac on dev.
func (h *Host) SetNeigh(dev, ip, mac string) error {
	lk, err := h.nl.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("netlab: %s: %s: %w", h.Name, dev, err)
	}
	ipa := net.ParseIP(ip)
	if ipa == nil {
		return fmt.Errorf("netlab: bad IP %q", ip)
	}
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return fmt.Errorf("netlab: bad MAC %q: %w", mac, err)
	}
	fam := netlink.FAMILY_V4
	if ipa.To4() == nil {
		fam = netlink.FAMILY_V6
	}
	n := &netlink.Neigh{LinkIndex: lk.Attrs().Index, Family: fam, State: netlink.NUD_PERMANENT, IP: ipa, HardwareAddr: hw}
	if err := h.nl.NeighSet(n); err != nil {
		return fmt.Errorf("netlab: %s: neigh %s %s on %s: %w", h.Name, ip, mac, dev, err)
	}
	return nil
}

// Veth makes a veth pair: end inner inside host h (up, with the given
// addresses), end l.Name(outer) in the root namespace (up). It returns the

// Remove deletes the host's namespace now, with every interface in it (the
// far ends of its veths go too), as a crashed container's namespace goes.
func (h *Host) Remove() error {
	l := h.lab
	l.mu.Lock()
	for i, x := range l.hosts {
		if x == h {
			l.hosts = append(l.hosts[:i], l.hosts[i+1:]...)
			break
		}
	}
	l.mu.Unlock()
	return h.destroy()
}

func (h *Host) destroy() error {
	if h.nl != nil {
		h.nl.Close()
	}
	if h.ns.IsOpen() {
		h.ns.Close()
	}
	if err := netns.DeleteNamed(h.Name); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("delete netns %s: %w", h.Name, err)
	}
	return nil
}
