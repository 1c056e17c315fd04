package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// endpointLink matches the names edgenf-cni gives pods' host interfaces.
var endpointLink = regexp.MustCompile(`^enf[0-9a-f]{12}$`)

// nodeSnapshot is what a refused ADD must leave as it was: the daemon's
// topology, tenants and endpoints, the node's interfaces for the test's pods
// (p's, and others'), the IPAM plugin's allocations and p's namespace.
func nodeSnapshot(t *testing.T, d *daemon, ipamDir string, p *pod, others ...*pod) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"get", "topology"}, {"tenant", "list"}, {"endpoint", "list"}} {
		b.WriteString(d.cli(append(args, "-o", "json")...))
	}
	// A pod's host interface is created with its peer in the pod's
	// namespace (cmd/edgenf-cni/link.go), so one of these pods' is a veth
	// whose peer is in one of their namespaces. Other tests on this node
	// (other packages, other checkouts) plug and unplug pods of their own
	// meanwhile: those are not this test's to compare.
	ours := map[int]bool{}
	for _, q := range append([]*pod{p}, others...) {
		if id, err := netlink.GetNetNsIdByFd(int(q.h.NsHandle())); err == nil && id >= 0 {
			ours[id] = true
		}
	}
	links, err := netlab.LinkList(nil) // (other tests change the host's links meanwhile)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		// not daemons' injection links (enfi...)
		if endpointLink.MatchString(l.Attrs().Name) && ours[l.Attrs().NetNsID] {
			fmt.Fprintln(&b, "link", l.Attrs().Name)
		}
	}
	filepath.Walk(ipamDir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.HasPrefix(info.Name(), "last_reserved") && info.Name() != "lock" {
			fmt.Fprintln(&b, "ipam", path)
		}
		return nil
	})
	podLinks, err := netlab.LinkList(p.h.Netlink())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range podLinks {
		fmt.Fprintln(&b, "pod link", l.Attrs().Name)
	}
	return b.String()
}

// Bad input to the plugin gets a CNI error with the code that says what is
// wrong, and leaves the node as it was: a cube the node lacks, a tenant the
// daemon or the network does not know, a cube of another tenant, a pod
// without addresses on a router (nothing to route to it), a pod of a
// namespace the tenant does not take, a tenant over its quota, edgenfd not
// running (retryable), malformed or misspelt configurations.
func TestCNIBadInput(t *testing.T) {
	testenv.E2E(t)
	lab := netlab.NewT(t)
	d := startDaemon(t)
	node := newChainNode(t, lab, d, red, blue)
	ipamDir := t.TempDir()
	p := makePods(t, lab, "red", 0, 1)[0]
	good := node.conflist("edge", ipamDir, d.socket)
	// red gets a quota of the ports it has (bridge 1, router 2) plus one
	d.cli("tenant", "set", "red", "--quota", "ports=4")
	before := nodeSnapshot(t, d, ipamDir, p)

	withPlugin := func(extra string) string { // the plugin's object with extra fields
		return strings.Replace(good, `"type": "edgenf-cni",`, `"type": "edgenf-cni", `+extra+`,`, 1)
	}
	ipam := hostLocal(filepath.Join(ipamDir, "red"), red.v4, red.gw4, red.v6, red.gw6)
	single := func(tenant, cube string) string { // one tenant, the network's default
		return fmt.Sprintf(`{"cniVersion": "1.1.0", "name": "edge", "plugins": [{"type": "edgenf-cni", "socket": %q,
		  "capabilities": {"io.kubernetes.cri.pod-annotations": true}, "tenant": %q, "tenants": {%q: {"cube": %q, "ipam": %s}}}]}`, d.socket, tenant, tenant, cube, ipam)
	}
	down := filepath.Join(t.TempDir(), "no-daemon.sock")
	for _, c := range []struct {
		name     string
		conflist string
		ns       string
		ann      map[string]string
		code     uint
		msg      string
	}{
		{"missing cube", single("red", "nosuch"), "red", nil, types.ErrInvalidNetworkConfig, "no cube of that name"},
		{"tenant the daemon does not know", single("green", "redbr"), "red", map[string]string{"edgenf.io/tenant": "green"}, types.ErrInvalidNetworkConfig, "knows no tenant"},
		{"tenant the network does not list", good, "red", map[string]string{"edgenf.io/tenant": "yellow"}, types.ErrInvalidNetworkConfig, `"yellow" is not one of network edge's tenants`},
		{"cube of another tenant", single("red", "bluebr"), "red", nil, types.ErrInvalidNetworkConfig, "tenant blue's, not tenant red's"},
		{"router cube, pod without addresses", strings.Replace(single("red", "redr"), ipam, "{}", 1), "red", nil, types.ErrInvalidNetworkConfig, "needs an address to be routed to"},
		{"namespace the tenant does not take", good, "shop", map[string]string{"edgenf.io/tenant": "red"}, 101, "takes pods of namespaces red only"},
		{"tenant without namespaces", strings.Replace(good, `"namespaces": ["shop"], `, "", 1), "shop", map[string]string{"edgenf.io/tenant": "blue"}, 101, "lists no namespaces"},
		{"slice the tenant does not have", good, "red", map[string]string{"edgenf.io/slice": "cctv"}, types.ErrInvalidNetworkConfig, `no slice "cctv"`},
		{"edgenfd not running", strings.ReplaceAll(good, d.socket, down), "red", nil, types.ErrTryAgainLater, "not reachable"},
		{"IPAM plugin the node lacks", strings.Replace(good, `"type": "host-local"`, `"type": "no-such-ipam"`, 1), "red", nil, types.ErrInvalidNetworkConfig, `IPAM plugin "no-such-ipam"`},
		{"misspelt field", withPlugin(`"tenats": {}`), "red", nil, types.ErrUnsupportedField, `unknown field "tenats"`},
		{"bad mtu", withPlugin(`"mtu": 10`), "red", nil, types.ErrInvalidNetworkConfig, "mtu 10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newCNIRuntime(t, d, c.conflist)
			q := *p
			q.namespace, q.ann = c.ns, c.ann
			err := r.add(&q)
			if cniCode(err) != c.code || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("ADD: got %v (code %d), want code %d with %q", err, cniCode(err), c.code, c.msg)
			}
			if after := nodeSnapshot(t, d, ipamDir, p); after != before {
				t.Fatalf("the refused ADD changed the node:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}

	// over red's quota: one pod fits (4 ports), the second is refused
	r := newCNIRuntime(t, d, good)
	more := makePods(t, lab, "red", 1, 2)
	if err := r.add(more[0]); err != nil {
		t.Fatalf("ADD within the quota: %v", err)
	}
	// (the snapshot's scope sees this test's pods' interfaces)
	hostIf := ""
	for _, i := range more[0].res.Interfaces {
		if i.Sandbox == "" {
			hostIf = i.Name
		}
	}
	if plugged := nodeSnapshot(t, d, ipamDir, p, more...); hostIf == "" || !strings.Contains(plugged, "link "+hostIf+"\n") {
		t.Fatalf("the snapshot misses the plugged pod's host interface %q:\n%s", hostIf, plugged)
	}
	if err := r.add(more[1]); cniCode(err) != 100 || !strings.Contains(err.Error(), "quota") {
		t.Fatalf("ADD over the quota: %v (code %d)", err, cniCode(err))
	}
	if got := len(d.endpoints()); got != 1 {
		t.Fatalf("%d endpoints after the refusal, want 1", got)
	}
	if links, _ := more[1].h.Netlink().LinkList(); len(links) != 1 {
		t.Fatalf("the refused pod kept interfaces: %d", len(links))
	}
	if err := r.del(more[0]); err != nil {
		t.Fatal(err)
	}
	if after := nodeSnapshot(t, d, ipamDir, p, more...); after != before {
		t.Fatalf("ADD then DEL changed the node:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// edgenfd down: STATUS says the plugin is not available, DEL is
	// retryable and touches nothing
	rd := newCNIRuntime(t, d, strings.ReplaceAll(good, d.socket, down))
	if err := rd.status(); cniCode(err) != types.ErrPluginNotAvailable {
		t.Errorf("STATUS without edgenfd: %v (code %d)", err, cniCode(err))
	}
	if err := rd.del(p); cniCode(err) != types.ErrTryAgainLater {
		t.Errorf("DEL without edgenfd: %v (code %d)", err, cniCode(err))
	}

	// What no runtime parses for it: the plugin run as a runtime runs it,
	// with a configuration that is not JSON, or lacks CNI_* variables.
	for _, c := range []struct {
		stdin string
		env   []string
		code  uint
	}{
		{`{not json`, nil, types.ErrDecodingFailure},
		{`{"cniVersion": "1.1.0", "name": "edge", "type": "edgenf-cni", "tenants": []}`, nil, types.ErrDecodingFailure},
		{`{"cniVersion": "1.1.0", "name": "edge", "type": "edgenf-cni", "cube": "redbr"}`, []string{"CNI_IFNAME="}, types.ErrInvalidEnvironmentVariables},
		{`{"cniVersion": "9.9.9", "name": "edge", "type": "edgenf-cni", "cube": "redbr"}`, nil, types.ErrIncompatibleCNIVersion},
		{fmt.Sprintf(`{"cniVersion": "1.1.0", "name": "edge", "type": "edgenf-cni", "socket": %q, "tenant": "red", "cube": "redbr"}`, d.socket),
			[]string{"CNI_NETNS=/var/run/netns/" + lab.Prefix() + "-gone"}, types.ErrUnknownContainer},
	} {
		cmd := exec.Command(filepath.Join(binDir, "edgenf-cni"))
		cmd.Env = append([]string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=x1", "CNI_NETNS=/var/run/netns/" + p.h.Name, "CNI_IFNAME=eth0", "CNI_PATH=" + referencePlugins}, c.env...)
		cmd.Stdin = strings.NewReader(c.stdin)
		var out bytes.Buffer
		cmd.Stdout = &out
		err := cmd.Run()
		var te types.Error
		if err == nil || json.Unmarshal(out.Bytes(), &te) != nil || te.Code != c.code {
			t.Errorf("%s %v: exit %v, stdout %s; want CNI error code %d", c.stdin, c.env, err, out.String(), c.code)
		}
	}
	if after := nodeSnapshot(t, d, ipamDir, p, more...); after != before {
		t.Fatalf("bad input changed the node:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
