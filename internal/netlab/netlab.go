// Package netlab builds small, disposable network labs out of Linux network
// namespaces and veth pairs, for tests, demos and benchmarks.
//
// A Lab owns everything it creates (namespaces and links) and removes all of
// it in Close. Every name carries the lab's prefix so that labs running in
// parallel (tests in several packages, a benchmark) never collide:
//
//   - a host (namespace) is "<prefix>-<name>";
//   - a link in the root namespace is "<prefix>-<name>" (at most 15 bytes).
//
// Addresses used with a lab must come from 198.18.0.0/15 or 2001:db8::/32;
// the lab never routes anything towards real interfaces.
package netlab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// MaxPrefix is the longest lab prefix accepted by New.
const MaxPrefix = 6

var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// Lab owns every namespace and link it creates and removes them all in Close.
type Lab struct {
	prefix string

	mu        sync.Mutex
	hosts     []*Host
	rootLinks []string // root-namespace link names to delete on Close
	closed    bool
}

// New returns an empty lab whose names start with prefix (lower-case letters
// and digits, starting with a letter, at most MaxPrefix characters).
func New(prefix string) (*Lab, error) {
	if len(prefix) == 0 || len(prefix) > MaxPrefix || !prefixRE.MatchString(prefix) {
		return nil, fmt.Errorf("netlab: bad prefix %q: want [a-z][a-z0-9]*, at most %d chars", prefix, MaxPrefix)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("netlab: must run as root")
	}
	return &Lab{prefix: prefix}, nil
}

var labCounter atomic.Uint32

const b36 = "0123456789abcdefghijklmnopqrstuvwxyz"

func base36(v uint32, width int) string {
	b := make([]byte, width)
	for i := width - 1; i >= 0; i-- {
		b[i] = b36[v%36]
		v /= 36
	}
	return string(b)
}

// UniquePrefix returns a prefix that is unique within this process and very
// likely unique across processes: "n" + 3 base-36 digits of the pid + 2 of a
// counter. Prefixes already used by an existing namespace are skipped.
func UniquePrefix() string {
	pid := uint32(os.Getpid()) % (36 * 36 * 36)
	for range 36 * 36 {
		c := labCounter.Add(1) % (36 * 36)
		p := "n" + base36(pid, 3) + base36(c, 2)
		if m, _ := filepath.Glob(filepath.Join(netnsDir, p+"-*")); len(m) == 0 {
			return p
		}
	}
	return "n" + base36(pid, 3) + base36(labCounter.Add(1)%(36*36), 2)
}

// NewT returns a lab with a unique prefix that is closed when the test ends.
// A test with a lab is an end-to-end test: it skips under -short and when not
// running as root (testenv.E2E), and fails on any other error.
func NewT(t testing.TB) *Lab {
	t.Helper()
	testenv.E2E(t)
	l, err := New(UniquePrefix())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("netlab: close %s: %v", l.prefix, err)
		}
	})
	return l
}

// Prefix returns the lab's name prefix.
func (l *Lab) Prefix() string { return l.prefix }

// Name prefixes a root-namespace link name: "<prefix>-<s>". It panics if the
// result is longer than 15 bytes (IFNAMSIZ-1), as that is a programming error.
func (l *Lab) Name(s string) string {
	n := l.prefix + "-" + s
	if len(n) > 15 {
		panic(fmt.Sprintf("netlab: interface name %q longer than 15 bytes", n))
	}
	return n
}

func (l *Lab) checkName(s string) (string, error) {
	n := l.prefix + "-" + s
	if s == "" || len(n) > 15 {
		return "", fmt.Errorf("netlab: interface name %q empty or longer than 15 bytes", n)
	}
	return n, nil
}

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
// and safe to call after a partial setup.
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	links, hosts := l.rootLinks, l.hosts
	l.rootLinks, l.hosts = nil, nil
	l.mu.Unlock()

	var errs []error
	for _, n := range links {
		lk, err := netlink.LinkByName(n)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if errors.As(err, &nf) {
				continue // already gone with its peer or namespace
			}
			errs = append(errs, fmt.Errorf("netlab: close: %s: %w", n, err))
			continue
		}
		if err := netlink.LinkDel(lk); err != nil && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("netlab: close: delete %s: %w", n, err))
		}
	}
	for _, h := range hosts {
		if err := h.destroy(); err != nil {
			errs = append(errs, fmt.Errorf("netlab: close: %w", err))
		}
	}
	return errors.Join(errs...)
}

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

// Leftovers lists namespaces and root links that still carry the prefix
// (empty after a successful Close). For tests and debugging.
func Leftovers(prefix string) ([]string, error) {
	var out []string
	m, _ := filepath.Glob(filepath.Join(netnsDir, prefix+"-*"))
	for _, p := range m {
		out = append(out, "netns "+filepath.Base(p))
	}
	links, err := linkList()
	if err != nil {
		return out, err
	}
	for _, lk := range links {
		if strings.HasPrefix(lk.Attrs().Name, prefix+"-") {
			out = append(out, "link "+lk.Attrs().Name)
		}
	}
	return out, nil
}
