package scenarios

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/edgenf/edgenf/bench/kern"
	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/cnitest"
	"github.com/edgenf/edgenf/internal/netlab"
)

// The cni group: pod to pod on one node, through the pods' veths as CNI
// plugins make them. The node is a namespace running edgenfd (or, for the
// baseline, the reference bridge plugin's Linux bridge); the two "pods"
// whose interfaces the generator and the sink use are in the harness's
// namespace (CNI_NETNS), so the frames go generator → pod A's eth → node →
// pod B's eth → sink. Each setup also measures its plugin's ADD latency
// (median and p99 over 100 pods, with host-local IPAM) and rate (ADDs per
// second, 10 in parallel), reported in the scenario's notes.

const referencePlugins = "/usr/lib/cni" // Debian's containernetworking-plugins

func init() {
	scenario.Register(scenario.Scenario{
		Name: "cni-bridge", Group: "cni", Baseline: true, Quick: true,
		Doc:   "pod to pod through the reference bridge CNI plugin (Linux bridge, bridge-nf-call-iptables as the kernel has it)",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupCNI(e, false) },
	})
	scenario.Register(scenario.Scenario{
		Name: "edgenf-cni", Group: "cni", Order: 10, Quick: true,
		Doc:   "pod to pod through edgenf-cni: a tenant's bridge cube at XDP on the node",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupCNI(e, true) },
	})
}

var cniBins struct {
	once sync.Once
	dir  string
	err  error
}

// cniBinaries builds edgenfd, the CLI and edgenf-cni once per run.
func cniBinaries() (string, error) {
	cniBins.once.Do(func() {
		if cniBins.dir, cniBins.err = os.MkdirTemp("", "edgenf-bench-cni"); cniBins.err != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", cniBins.dir+"/", "github.com/edgenf/edgenf/cmd/edgenfd", "github.com/edgenf/edgenf/cmd/edgenf-cni").CombinedOutput()
		if err != nil {
			cniBins.err = fmt.Errorf("build: %v: %s", err, out)
		}
	})
	return cniBins.dir, cniBins.err
}

// cniNode is a node namespace with, for edgenf, its daemon.
type cniNode struct {
	e      *scenario.Env
	node   *netlab.Host
	bins   string
	socket string
	cni    *libcni.CNIConfig
}

func newCNINode(e *scenario.Env, edgenf bool) (*cniNode, error) {
	bins, err := cniBinaries()
	if err != nil {
		return nil, err
	}
	node, err := e.Lab.Host(e.ID())
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "edgenf-bench-cni-node")
	if err != nil {
		return nil, err
	}
	e.Defer(func() { os.RemoveAll(dir) })
	n := &cniNode{e: e, node: node, bins: bins, socket: filepath.Join(dir, "edgenf.sock"),
		cni: libcni.NewCNIConfigWithCacheDir([]string{bins, referencePlugins}, filepath.Join(dir, "cache"), &cnitest.NSExec{NetNS: "/var/run/netns/" + node.Name})}
	if !edgenf {
		return n, nil
	}
	args := []string{"--net=/var/run/netns/" + node.Name, filepath.Join(bins, "edgenfd"), "-socket", n.socket,
		"-state", filepath.Join(dir, "state.json"), "-bpffs", filepath.Join("/sys/fs/bpf", e.Lab.Prefix()+"-"+e.ID())}
	d := exec.Command("nsenter", args...)
	if err := d.Start(); err != nil {
		return nil, err
	}
	e.Defer(func() {
		d.Process.Signal(os.Interrupt)
		d.Wait()
		exec.Command("nsenter", append(args, "-destroy")...).Run()
	})
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", n.socket); err == nil {
			c.Close()
			return n, nil
		}
		if time.Now().After(end) {
			return nil, fmt.Errorf("edgenfd did not start in %s", node.Name)
		}
	}
}

func (n *cniNode) api() *client.Client { return client.New(n.socket, "", "") }

// conflist is the node's network: pods on bridges br-a and br-b (50 each:
// a bridge has 64 ports), or on the reference plugin's Linux bridge, with
// host-local addresses (none for the two measured pods).
func (n *cniNode) conflist(edgenf bool, ipamDir string) (*libcni.NetworkConfigList, error) {
	ipam := func(sub string) string {
		if ipamDir == "" {
			return "{}"
		}
		return fmt.Sprintf(`{"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": "198.18.%s.0/23"}]]}`, ipamDir, sub)
	}
	name := "bench" + n.e.ID()
	if !edgenf {
		return libcni.ConfListFromBytes([]byte(fmt.Sprintf(`{"cniVersion": "1.0.0", "name": %q, "plugins": [
		  {"type": "bridge", "bridge": "cni0", "ipam": %s}]}`, name, ipam("40"))))
	}
	return libcni.ConfListFromBytes([]byte(fmt.Sprintf(`{"cniVersion": "1.1.0", "name": %q, "plugins": [
	  {"type": "edgenf-cni", "socket": %q, "capabilities": {"io.kubernetes.cri.pod-annotations": true},
	   "tenants": {"a": {"cube": "br-a", "namespaces": ["*"], "ipam": %s}, "b": {"cube": "br-b", "namespaces": ["*"], "ipam": %s}}}]}`, name, n.socket, ipam("40"), ipam("42"))))
}

func setupCNI(e *scenario.Env, edgenf bool) (*scenario.Topology, error) {
	n, err := newCNINode(e, edgenf)
	if err != nil {
		return nil, err
	}
	if edgenf {
		for _, c := range []string{"br-a", "br-b"} {
			tenant := c[len(c)-1:]
			if err := n.api().Do("POST", "/v1/cubes", map[string]any{"name": c, "type": "bridge", "hook": "xdp", "tenant": tenant}, nil); err != nil {
				return nil, err
			}
		}
	}
	pods := 100
	if e.Quick {
		pods = 20
	}
	// first: every change re-prepares the cube ports' redirect targets,
	// which would take the sink's place again
	info, err := n.addLatency(edgenf, pods)
	if err != nil {
		return nil, err
	}
	t, err := n.measuredPods(edgenf)
	if err != nil {
		return nil, err
	}
	for k, v := range info {
		t.Info[k] = v
	}
	return t, nil
}

// measuredPods ADDs the two pods the traffic crosses: their interfaces in
// the harness's namespace, without addresses (layer 2).
func (n *cniNode) measuredPods(edgenf bool) (*scenario.Topology, error) {
	list, err := n.conflist(edgenf, "")
	if err != nil {
		return nil, err
	}
	// The pods' namespace is the harness's, named for the plugin by an open
	// descriptor: /proc/PID/ns/net is the main thread's, which a locked
	// goroutine may have moved to another namespace for good.
	runtime.LockOSThread()
	here, err := netns.Get()
	runtime.UnlockOSThread()
	if err != nil {
		return nil, err
	}
	n.e.Defer(func() { here.Close() })
	self := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), int(here))
	var ifs [2]netlink.Link
	for i, name := range []string{n.e.Lab.Name(n.e.ID() + "pa"), n.e.Lab.Name(n.e.ID() + "pb")} {
		rt := &libcni.RuntimeConf{ContainerID: name, NetNS: self, IfName: name, CapabilityArgs: map[string]any{
			"io.kubernetes.cri.pod-annotations": map[string]string{"edgenf.io/tenant": "a"}}}
		if _, err := n.cni.AddNetworkList(n.e.Ctx, list, rt); err != nil {
			return nil, fmt.Errorf("ADD %s: %w", name, err)
		}
		n.e.Defer(func() {
			n.cni.DelNetworkList(context.Background(), list, rt)
			if l, err := netlink.LinkByName(name); err == nil {
				netlink.LinkDel(l)
			}
		})
		if ifs[i], err = netlink.LinkByName(name); err != nil {
			return nil, fmt.Errorf("pod interface %s: %w", name, err)
		}
	}
	a, b := ifs[0].Attrs(), ifs[1].Attrs()
	hostB, err := n.hostEnd(b.Index)
	if err != nil {
		return nil, err
	}
	// The sink never sends, so its MAC is never learned: a static entry
	// stands for "learned", in either bridge.
	if edgenf {
		if err := n.api().Do("POST", "/v1/cubes/br-a/tables/fdb", map[string]any{"mac": b.HardwareAddr.String(), "port": hostB.Attrs().Name}, nil); err != nil {
			return nil, err
		}
		if x := b.Xdp; x != nil && x.Attached { // the engine's pass-through: the sink takes its place
			if err := netlink.LinkSetXdpFd(ifs[1], -1); err != nil {
				return nil, err
			}
		}
	} else {
		nl := n.node.Netlink()
		if err := nl.NeighSet(&netlink.Neigh{LinkIndex: hostB.Attrs().Index, Family: 7 /* AF_BRIDGE */, State: netlink.NUD_NOARP, // static (NUD_PERMANENT would make it local)
			Flags: netlink.NTF_MASTER, HardwareAddr: b.HardwareAddr}); err != nil {
			return nil, fmt.Errorf("fdb: %w", err)
		}
		// the generator's redirected frames reach pod A's host end only
		// if an XDP program runs there
		hostA, err := n.hostEnd(a.Index)
		if err != nil {
			return nil, err
		}
		var l interface{ Close() error }
		if err := n.node.Do(func() error {
			var err error
			l, err = kern.AttachXDP(n.e.Objs.Pass, hostA.Attrs().Index)
			return err
		}); err != nil {
			return nil, err
		}
		n.e.Defer(func() { l.Close() })
	}
	t := &scenario.Topology{GenIfindex: a.Index, SinkIfindex: b.Index, Info: map[string]string{},
		Frame: kern.Frame{SrcMAC: a.HardwareAddr, DstMAC: b.HardwareAddr, SrcIP: scenario.SrcNet, DstIP: scenario.DstIP}}
	if edgenf {
		t.Info["hook"] = "xdp"
	}
	return t, nil
}

// hostEnd finds, in the node, the far end of a pod interface.
func (n *cniNode) hostEnd(podIfindex int) (netlink.Link, error) {
	l, err := netlink.LinkByIndex(podIfindex)
	if err != nil {
		return nil, err
	}
	peer, err := netlink.VethPeerIndex(l.(*netlink.Veth))
	if err != nil {
		return nil, err
	}
	host, err := n.node.Netlink().LinkByIndex(peer)
	if err != nil {
		return nil, fmt.Errorf("host end of %s (index %d in %s): %w", l.Attrs().Name, peer, n.node.Name, err)
	}
	return host, nil
}

// addLatency ADDs pods one at a time (latency of each), then the same
// number 10 at a time (rate), each pod a namespace with host-local
// addresses, and DELs them.
func (n *cniNode) addLatency(edgenf bool, pods int) (map[string]string, error) {
	ipamDir, err := os.MkdirTemp("", "edgenf-bench-ipam")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ipamDir)
	list, err := n.conflist(edgenf, ipamDir)
	if err != nil {
		return nil, err
	}
	hosts := make([]*netlab.Host, pods)
	for i := range hosts {
		if hosts[i], err = n.e.Lab.Host(fmt.Sprintf("%sp%d", n.e.ID(), i)); err != nil {
			return nil, err
		}
	}
	rt := func(i, round int) *libcni.RuntimeConf {
		return &libcni.RuntimeConf{ContainerID: fmt.Sprintf("%s-%d-%d", hosts[i].Name, round, i), NetNS: "/var/run/netns/" + hosts[i].Name, IfName: "eth0",
			Args:           [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "bench"}, {"K8S_POD_NAME", fmt.Sprint("pod-", i)}},
			CapabilityArgs: map[string]any{"io.kubernetes.cri.pod-annotations": map[string]string{"edgenf.io/tenant": []string{"a", "b"}[i%2]}}}
	}
	delAll := func(round int) error {
		for i := range hosts {
			if err := n.cni.DelNetworkList(n.e.Ctx, list, rt(i, round)); err != nil {
				return fmt.Errorf("DEL: %w", err)
			}
		}
		return nil
	}
	lat := make([]float64, pods)
	for i := range hosts {
		t0 := time.Now()
		if _, err := n.cni.AddNetworkList(n.e.Ctx, list, rt(i, 0)); err != nil {
			delAll(0)
			return nil, fmt.Errorf("ADD: %w", err)
		}
		lat[i] = float64(time.Since(t0).Microseconds()) / 1000
	}
	if err := delAll(0); err != nil {
		return nil, err
	}
	sort.Float64s(lat)
	work := make(chan int)
	errs := make(chan error, pods)
	var wg sync.WaitGroup
	t0 := time.Now()
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if _, err := n.cni.AddNetworkList(n.e.Ctx, list, rt(i, 1)); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range hosts {
		work <- i
	}
	close(work)
	wg.Wait()
	rate := float64(pods) / time.Since(t0).Seconds()
	close(errs)
	if err := <-errs; err != nil {
		delAll(1)
		return nil, fmt.Errorf("parallel ADD: %w", err)
	}
	if err := delAll(1); err != nil {
		return nil, err
	}
	p99 := lat[min(len(lat)-1, int(float64(len(lat))*0.99))]
	return map[string]string{fmt.Sprintf("CNI ADD, %d pods with host-local", pods): fmt.Sprintf("median %.1f ms, p99 %.1f ms; %.0f ADDs/s with 10 in parallel", lat[len(lat)/2], p99, rate)}, nil
}
