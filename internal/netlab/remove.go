package netlab

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// RemoveAll deletes every namespace and root-namespace link whose name
// starts with prefix-, for a lab another process made (the demo's teardown).
func RemoveAll(prefix string) error {
	var errs []error
	names, _ := filepath.Glob(filepath.Join(netnsDir, prefix+"-*"))
	for _, p := range names {
		if err := netns.DeleteNamed(filepath.Base(p)); err != nil {
			errs = append(errs, err)
		}
	}
	links, err := LinkList(nil)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, lk := range links {
		if strings.HasPrefix(lk.Attrs().Name, prefix+"-") {
			if err := netlink.LinkDel(lk); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// LinkList lists the links of nl's namespace (the caller's when nl is nil),
// retrying dumps interrupted by concurrent link changes (other labs, tests of
// other packages, benchmarks running at the same time): such a dump comes
// back incomplete, with netlink.ErrDumpInterrupted.
func LinkList(nl *netlink.Handle) ([]netlink.Link, error) {
	list := netlink.LinkList
	if nl != nil {
		list = nl.LinkList
	}
	var err error
	for i := 0; i < 10; i++ {
		var links []netlink.Link
		if links, err = list(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return links, err
		}
	}
	return nil, err
}
