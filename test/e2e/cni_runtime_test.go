package e2e

// A container runtime, as far as CNI goes: libcni (the library containerd
// and CRI-O use) driving edgenf-cni, with pods as network namespaces.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/cnitest"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/netlab"
)

// referencePlugins is where Debian's containernetworking-plugins puts
// host-local, bridge and the others (scripts/setup.sh installs it).
const referencePlugins = "/usr/lib/cni"

// cniRuntime runs CNI operations on one node: its daemon, maybe in a
// namespace (the plugins run there too, as a node's runtime runs them in
// the node's).
type cniRuntime struct {
	t     *testing.T
	d     *daemon
	cni   *libcni.CNIConfig
	list  *libcni.NetworkConfigList
	cache string // libcni's cache of results
}

func newCNIRuntime(t *testing.T, d *daemon, conflist string) *cniRuntime {
	t.Helper()
	if _, err := os.Stat(filepath.Join(referencePlugins, "host-local")); err != nil {
		t.Fatalf("the reference CNI plugins are missing (scripts/setup.sh installs containernetworking-plugins): %v", err)
	}
	ex := &cnitest.NSExec{NetNS: d.netns}
	list, err := libcni.ConfListFromBytes([]byte(conflist))
	if err != nil {
		t.Fatalf("conflist: %v\n%s", err, conflist)
	}
	cache := t.TempDir()
	return &cniRuntime{t: t, d: d, cni: libcni.NewCNIConfigWithCacheDir([]string{binDir, referencePlugins}, cache, ex), list: list, cache: cache}
}

// pod is a pod's sandbox: a namespace, and what the runtime knows of it.
type pod struct {
	h         *netlab.Host
	id        string // container id
	namespace string // Kubernetes namespace
	name      string
	ann       map[string]string // annotations
	res       *current.Result
}

func (p *pod) String() string { return p.namespace + "/" + p.name }

// ip is the pod's first address of a family (4 or 6), without its prefix
// (loopback addresses of a chained loopback plugin aside).
func (p *pod) ip(family int) string {
	for _, ipc := range p.res.IPs {
		if (ipc.Address.IP.To4() != nil) == (family == 4) && !ipc.Address.IP.IsLoopback() {
			return ipc.Address.IP.String()
		}
	}
	return ""
}

func (r *cniRuntime) rt(p *pod) *libcni.RuntimeConf {
	rc := &libcni.RuntimeConf{
		ContainerID: p.id, NetNS: "/var/run/netns/" + p.h.Name, IfName: "eth0",
		Args: [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", p.namespace}, {"K8S_POD_NAME", p.name}, {"K8S_POD_INFRA_CONTAINER_ID", p.id}},
	}
	if p.ann != nil {
		rc.CapabilityArgs = map[string]interface{}{"io.kubernetes.cri.pod-annotations": p.ann}
	}
	return rc
}

func (r *cniRuntime) ctx() context.Context { return ctx(r.t, 2*time.Minute) }

func (r *cniRuntime) add(p *pod) error {
	res, err := r.cni.AddNetworkList(r.ctx(), r.list, r.rt(p))
	if err != nil {
		return err
	}
	p.res, err = current.NewResultFromResult(res)
	return err
}

func (r *cniRuntime) check(p *pod) error { return r.cni.CheckNetworkList(r.ctx(), r.list, r.rt(p)) }
func (r *cniRuntime) del(p *pod) error   { return r.cni.DelNetworkList(r.ctx(), r.list, r.rt(p)) }
func (r *cniRuntime) status() error      { return r.cni.GetStatusNetworkList(r.ctx(), r.list) }

// forget drops what the runtime cached of a pod (a runtime restarted
// without its state): its GC then cannot DEL the pod itself.
func (r *cniRuntime) forget(p *pod) {
	os.Remove(filepath.Join(r.cache, "results", fmt.Sprintf("%s-%s-%s", r.list.Name, p.id, "eth0")))
}

// gc tells the plugins which attachments are still valid.
func (r *cniRuntime) gc(valid []*pod) error {
	args := &libcni.GCArgs{}
	for _, p := range valid {
		args.ValidAttachments = append(args.ValidAttachments, types.GCAttachment{ContainerID: p.id, IfName: "eth0"})
	}
	return r.cni.GCNetworkList(r.ctx(), r.list, args)
}

// endpoints lists the daemon's endpoints, by name.
func (d *daemon) endpoints() map[string]*endpoint.Endpoint {
	d.t.Helper()
	var list []*endpoint.Endpoint
	if err := client.New(d.socket, "", "").Do("GET", "/v1/endpoints", nil, &list); err != nil {
		d.t.Fatal(err)
	}
	out := map[string]*endpoint.Endpoint{}
	for _, e := range list {
		out[e.Name] = e
	}
	return out
}

// cniCode is the CNI error code of err (0: not a CNI error).
func cniCode(err error) uint {
	var te *types.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

// hostLocal is a host-local IPAM object: an IPv4 and an IPv6 range with
// their gateways, a default route for each family, allocations in dir.
func hostLocal(dir, v4, gw4, v6, gw6 string) string {
	return fmt.Sprintf(`{"type": "host-local", "dataDir": %q,
	  "ranges": [[{"subnet": %q, "gateway": %q}], [{"subnet": %q, "gateway": %q}]],
	  "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]}`, dir, v4, gw4, v6, gw6)
}

// ipamFiles lists the addresses host-local holds in dir for a network.
func ipamFiles(t *testing.T, dir, network string) []string {
	ents, err := os.ReadDir(filepath.Join(dir, network))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); !strings.HasPrefix(n, "last_reserved_ip") && n != "lock" {
			out = append(out, n)
		}
	}
	return out
}
