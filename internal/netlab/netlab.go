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
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"
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

// Leftovers lists namespaces and root links that still carry the prefix
// (empty after a successful Close). For tests and debugging.
func Leftovers(prefix string) ([]string, error) {
	var out []string
	m, _ := filepath.Glob(filepath.Join(netnsDir, prefix+"-*"))
	for _, p := range m {
		out = append(out, "netns "+filepath.Base(p))
	}
	links, err := LinkList(nil)
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
