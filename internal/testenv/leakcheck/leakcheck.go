// Package leakcheck fails a package's tests when they leave kernel objects
// behind: an engine's injection veth (enfi…a/b, with its edgenf_inject
// program) or a bpffs pin root named after the test process. An engine a
// test opens must be destroyed (Engine.Destroy, engine.DestroyAt or
// nftest.Engine's cleanup), or the machine keeps its objects after `make
// test`. Use it from TestMain:
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
package leakcheck

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/datapath"
)

// Main runs the tests, then reports and removes what they left behind; a
// leak fails the run.
func Main(m *testing.M) {
	code := m.Run()
	if leaks := Remove(); len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "leakcheck: the tests left these behind (removed now; destroy every engine a test opens):\n")
		for _, l := range leaks {
			fmt.Fprintf(os.Stderr, "  %s\n", l)
		}
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Remove finds what this process left behind, removes it and says what it
// was.
func Remove() []string {
	var leaks []string
	injectors := datapath.OpenedInjectors()
	for _, name := range slices.Sorted(maps.Keys(injectors)) {
		if l, err := netlink.LinkByName(name); err == nil {
			leaks = append(leaks, fmt.Sprintf("injection veth %s (datapath %s)", name, injectors[name]))
			netlink.LinkDel(l)
		}
	}
	// pin roots of tests are named <prefix>-<pid>[-<n>]
	own := regexp.MustCompile(fmt.Sprintf(`^[a-z0-9]+-%d(-[0-9]+)?$`, os.Getpid()))
	ents, _ := os.ReadDir("/sys/fs/bpf")
	for _, ent := range ents {
		if own.MatchString(ent.Name()) {
			leaks = append(leaks, "bpffs pins "+filepath.Join("/sys/fs/bpf", ent.Name()))
			os.RemoveAll(filepath.Join("/sys/fs/bpf", ent.Name()))
		}
	}
	return leaks
}
