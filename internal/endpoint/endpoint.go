// Package endpoint is edgenf's model of a workload plugged into a tenant's
// chain: a pod's interface, made by the CNI plugin (cmd/edgenf-cni), peered
// with a port of one of the tenant's cubes. An endpoint is one logical
// thing: the port, and the tenant's right to the interface, come and go
// together. The daemon creates both in one change and removes both in one
// change; nothing else may take the port apart in between.
package endpoint

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
)

// Endpoint is one workload attachment. Its name is also the name of the
// cube port and of the host-side interface, so that one identifier finds
// the pod's traffic everywhere (edgenf stats, ip link, the CNI's records).
type Endpoint struct {
	Name string `json:"name" format:"name" doc:"the endpoint, its cube port and its host interface share this name"`
	// Tenant owns the cube and, while the endpoint exists, the interface
	// ("" for the administrator's cubes).
	Tenant string `json:"tenant,omitempty" format:"name" doc:"the tenant the pod belongs to; its cube must be the tenant's"`
	// Slice is the tenant's slice the workload asked for (it chose Cube).
	Slice string `json:"slice,omitempty" format:"name" doc:"the tenant's slice the pod asked for"`
	Cube  string `json:"cube" format:"name" doc:"the cube the pod's interface is peered with"`
	// Interface is the host end of the pod's veth pair.
	Interface string `json:"interface" format:"ifname" doc:"the host end of the pod's veth pair"`

	// The CNI attachment: what the container runtime knows the pod by.
	Network     string `json:"network,omitempty" pattern:"^[ -~]{0,256}$" doc:"the CNI network name"`
	ContainerID string `json:"container_id,omitempty" pattern:"^[ -~]{0,256}$" doc:"the CNI container id"`
	IfName      string `json:"ifname,omitempty" pattern:"^[ -~]{0,256}$" doc:"the interface name inside the pod"`
	Pod         *Pod   `json:"pod,omitempty"`
	// Addresses and MAC of the pod's interface, for operators (the
	// datapath does not depend on them).
	Addresses []string `json:"addresses,omitempty" format:"ip-prefix" maxItems:"16" doc:"the pod's addresses, address/prefix"`
	MAC       string   `json:"mac,omitempty" format:"mac" doc:"the MAC of the pod's interface"`
	// Gateways are the cube's addresses the workload routes through, set
	// by the daemon when the cube routes (a router: its port's IPv4
	// link-local /32 and IPv6 link-local address); none on a bridge.
	Gateways []string `json:"gateways,omitempty" format:"ip" maxItems:"2" doc:"the cube's addresses the pod routes through (set by the daemon for a router cube: the port's 169.254.0.0/16 address and its IPv6 link-local address)"`
}

// Pod names the Kubernetes pod, when the runtime said which.
type Pod struct {
	Namespace string `json:"namespace,omitempty" pattern:"^[ -~]{0,253}$"`
	Name      string `json:"name,omitempty" pattern:"^[ -~]{0,253}$"`
	UID       string `json:"uid,omitempty" pattern:"^[ -~]{0,253}$"`
}

// Validate checks an endpoint's names and addresses; errors name the field.
func (e *Endpoint) Validate() error {
	if err := cube.CheckName("name", e.Name); err != nil {
		return err
	}
	if e.Tenant != "" {
		if err := cube.CheckName("tenant", e.Tenant); err != nil {
			return err
		}
	}
	if e.Slice != "" {
		if err := cube.CheckName("slice", e.Slice); err != nil {
			return err
		}
	}
	if err := cube.CheckName("cube", e.Cube); err != nil {
		return err
	}
	if e.Interface == "" {
		return cube.Errorf("interface", "required: the host end of the pod's interface")
	}
	if ep, err := cube.ParseEndpoint(e.Interface); err != nil || ep.IsCube() {
		return cube.Errorf("interface", "invalid interface name %q", e.Interface)
	}
	for _, f := range []struct{ name, v string }{{"network", e.Network}, {"container_id", e.ContainerID}, {"ifname", e.IfName}} {
		if len(f.v) > 256 {
			return cube.Errorf(f.name, "longer than 256 bytes")
		}
	}
	if e.Pod != nil {
		for _, f := range []struct{ name, v string }{{"namespace", e.Pod.Namespace}, {"name", e.Pod.Name}, {"uid", e.Pod.UID}} {
			if len(f.v) > 253 {
				return cube.Errorf("pod."+f.name, "longer than 253 bytes")
			}
		}
	}
	for i, a := range e.Addresses {
		if _, err := netip.ParsePrefix(a); err != nil {
			return cube.Errorf(fmt.Sprintf("addresses[%d]", i), "want address/prefix, got %q", a)
		}
	}
	if len(e.Addresses) > 16 {
		return cube.Errorf("addresses", "%d addresses: at most 16", len(e.Addresses))
	}
	if len(e.Gateways) > 2 {
		return cube.Errorf("gateways", "%d gateways: at most 2 (one per family)", len(e.Gateways))
	}
	for i, g := range e.Gateways {
		if _, err := netip.ParseAddr(g); err != nil {
			return cube.Errorf(fmt.Sprintf("gateways[%d]", i), "want an IP address, got %q", g)
		}
	}
	if e.MAC != "" {
		if hw, err := net.ParseMAC(e.MAC); err != nil || len(hw) != 6 {
			return cube.Errorf("mac", "want an Ethernet MAC like 02:00:00:00:00:01, got %q", e.MAC)
		}
	}
	return nil
}

// Equal reports whether two endpoints say the same in every field.
func (e *Endpoint) Equal(o *Endpoint) bool {
	if e.Name != o.Name || e.Tenant != o.Tenant || e.Slice != o.Slice || e.Cube != o.Cube || e.Interface != o.Interface ||
		e.Network != o.Network || e.ContainerID != o.ContainerID || e.IfName != o.IfName || e.MAC != o.MAC ||
		!slices.Equal(e.Addresses, o.Addresses) || !slices.Equal(e.Gateways, o.Gateways) || (e.Pod == nil) != (o.Pod == nil) {
		return false
	}
	return e.Pod == nil || *e.Pod == *o.Pod
}

// Clone returns a deep copy.
func (e *Endpoint) Clone() *Endpoint {
	n := *e
	n.Addresses = slices.Clone(e.Addresses)
	n.Gateways = slices.Clone(e.Gateways)
	if e.Pod != nil {
		p := *e.Pod
		n.Pod = &p
	}
	return &n
}

// Port is the cube port the endpoint is: its name, peered with its
// interface, the lowest free index.
func (e *Endpoint) Port() cube.Port {
	return cube.Port{Name: e.Name, Index: -1, Peer: e.Interface}
}
