package main

// The network configuration and where a pod goes: which tenant, which
// slice, which cube, which IPAM configuration.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/endpoint"
)

// Pod annotations (passed by the runtime in runtimeConfig, capability
// io.kubernetes.cri.pod-annotations) and CNI_ARGS keys (for runtimes
// without annotations) that choose the pod's tenant and slice.
const (
	annotationTenant = "edgenf.io/tenant"
	annotationSlice  = "edgenf.io/slice"
	argTenant        = "EDGENF_TENANT"
	argSlice         = "EDGENF_SLICE"
	// capPodAnnotations is the runtimeConfig key (and capability) of CRI-O
	// and containerd under which they pass the pod's annotations.
	capPodAnnotations = "io.kubernetes.cri.pod-annotations"
)

// NetConf is edgenf-cni's network configuration (one plugin of a conflist).
type NetConf struct {
	types.PluginConf
	// Socket is the node's edgenfd API socket (root only: the plugin acts
	// as the node's administrator).
	Socket string `json:"socket,omitempty"`
	// MTU of the pod's interface (0: the kernel's default, 1500).
	MTU int `json:"mtu,omitempty"`
	// Tenant is the default tenant, Cube its cube when Tenants does not
	// list it (a single-tenant network needs only these two).
	Tenant string `json:"tenant,omitempty"`
	Cube   string `json:"cube,omitempty"`
	// Tenants maps tenant names to where their pods go.
	Tenants map[string]*TenantConf `json:"tenants,omitempty"`

	RuntimeConfig struct {
		PodAnnotations map[string]string `json:"io.kubernetes.cri.pod-annotations,omitempty"`
	} `json:"runtimeConfig,omitempty"`

	// ipam is the raw "ipam" object (the default IPAM configuration).
	ipam json.RawMessage
	// raw is the whole configuration, handed to the IPAM plugin.
	raw map[string]json.RawMessage
}

// TenantConf says where a tenant's pods go.
type TenantConf struct {
	// Cube is the tenant's cube on this node that pods are plugged into
	// (a bridge, typically; the tenant's router sits behind it).
	Cube string `json:"cube"`
	// Namespaces, if set, are the only Kubernetes namespaces whose pods
	// may join the tenant (patterns as in path.Match: "red-*"). They also
	// make the tenant the default of pods of those namespaces.
	Namespaces []string `json:"namespaces,omitempty"`
	// IPAM overrides the network's ipam for this tenant's pods.
	IPAM json.RawMessage `json:"ipam,omitempty"`
	// Slices of the tenant a pod may ask for: each has its own cube (the
	// entry of the slice's chain) and, optionally, its own IPAM.
	Slices map[string]*SliceConf `json:"slices,omitempty"`
}

// SliceConf says where a slice's pods go.
type SliceConf struct {
	Cube string          `json:"cube"`
	IPAM json.RawMessage `json:"ipam,omitempty"`
}

// netConfKeys are the keys a configuration may have: the CNI spec's (GC's
// list under both the spec's name and the one libcni also sends) and
// edgenf-cni's. Anything else is a typo the plugin refuses, not ignores.
var netConfKeys = []string{
	"cniVersion", "cniVersions", "name", "type", "capabilities", "ipam", "dns", "args", "prevResult", "runtimeConfig",
	"cni.dev/valid-attachments", "cni.dev/attachments", "socket", "mtu", "tenant", "cube", "tenants",
}

// parseConf reads and checks the network configuration. Errors are CNI
// errors: 6 for what is not JSON, 2 for unknown fields, 7 for the rest.
func parseConf(stdin []byte) (*NetConf, error) {
	c := &NetConf{}
	if err := json.Unmarshal(stdin, &c.raw); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "network configuration is not a JSON object", err.Error())
	}
	for k := range c.raw {
		if !slices.Contains(netConfKeys, k) {
			return nil, types.NewError(types.ErrUnsupportedField, fmt.Sprintf("network configuration: unknown field %q", k),
				"edgenf-cni takes: "+strings.Join(netConfKeys, ", "))
		}
	}
	if err := strictJSON(stdin, c); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "network configuration: "+err.Error(), "")
	}
	c.ipam = c.raw["ipam"]
	if c.Socket == "" {
		c.Socket = client.DefaultSocket
	}
	if err := c.check(); err != nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "network configuration: "+err.Error(), "")
	}
	return c, nil
}

// strictJSON decodes into v, refusing unknown fields in edgenf-cni's own
// objects (the top level was checked against netConfKeys: its standard
// fields are decoded leniently, as other plugins of the list share them).
func strictJSON(b []byte, c *NetConf) error {
	if err := json.Unmarshal(b, c); err != nil {
		return err
	}
	if raw, ok := c.raw["tenants"]; ok {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		c.Tenants = nil
		if err := d.Decode(&c.Tenants); err != nil {
			return fmt.Errorf("tenants: %v", err)
		}
	}
	return nil
}

func (c *NetConf) check() error {
	if c.MTU != 0 && (c.MTU < 68 || c.MTU > 65535) {
		return fmt.Errorf("mtu %d: want 68..65535", c.MTU)
	}
	if !strings.HasPrefix(c.Socket, "/") {
		return fmt.Errorf("socket %q: want an absolute path", c.Socket)
	}
	if err := checkIPAM("ipam", c.ipam); err != nil {
		return err
	}
	if c.Tenant != "" {
		if err := cube.CheckName("tenant", c.Tenant); err != nil {
			return err
		}
	}
	if c.Cube != "" {
		if err := cube.CheckName("cube", c.Cube); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Tenants)) {
		t := c.Tenants[name]
		field := "tenants." + name
		if t == nil {
			return fmt.Errorf("%s: want an object", field)
		}
		if err := cube.CheckName(field, name); err != nil {
			return err
		}
		if err := cube.CheckName(field+".cube", t.Cube); err != nil {
			return err
		}
		for _, ns := range t.Namespaces {
			if _, err := path.Match(ns, ""); err != nil || ns == "" {
				return fmt.Errorf("%s.namespaces: bad pattern %q", field, ns)
			}
		}
		if err := checkIPAM(field+".ipam", t.IPAM); err != nil {
			return err
		}
		for _, sn := range slices.Sorted(maps.Keys(t.Slices)) {
			s := t.Slices[sn]
			sf := field + ".slices." + sn
			if s == nil {
				return fmt.Errorf("%s: want an object", sf)
			}
			if err := cube.CheckName(sf, sn); err != nil {
				return err
			}
			if s.Cube != "" {
				if err := cube.CheckName(sf+".cube", s.Cube); err != nil {
					return err
				}
			}
			if err := checkIPAM(sf+".ipam", s.IPAM); err != nil {
				return err
			}
		}
	}
	if c.Tenant != "" && c.Tenants[c.Tenant] == nil && c.Cube == "" {
		return fmt.Errorf("tenant %q: no cube for it (set cube, or list it in tenants)", c.Tenant)
	}
	if len(c.Tenants) == 0 && c.Cube == "" {
		return fmt.Errorf("no cube: set cube (and tenant), or tenants")
	}
	return nil
}

// checkIPAM checks that an IPAM object, if any, names its plugin.
func checkIPAM(field string, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var ip struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &ip); err != nil {
		return fmt.Errorf("%s: want an object: %v", field, err)
	}
	if ip.Type == "" && string(bytes.TrimSpace(raw)) != "{}" {
		return fmt.Errorf("%s: type (the IPAM plugin) is required", field)
	}
	if strings.ContainsAny(ip.Type, "/\\") || strings.HasPrefix(ip.Type, ".") {
		return fmt.Errorf("%s: type %q is not a plugin name", field, ip.Type)
	}
	return nil
}

// cniArgs are the CNI_ARGS keys edgenf-cni reads.
type cniArgs struct {
	types.CommonArgs
	K8S_POD_NAMESPACE types.UnmarshallableString
	K8S_POD_NAME      types.UnmarshallableString
	K8S_POD_UID       types.UnmarshallableString
	// K8S_POD_INFRA_CONTAINER_ID is passed by kubelet too.
	K8S_POD_INFRA_CONTAINER_ID types.UnmarshallableString
	EDGENF_TENANT              types.UnmarshallableString
	EDGENF_SLICE               types.UnmarshallableString
}

func parseArgs(s string) (*cniArgs, error) {
	a := &cniArgs{}
	if err := types.LoadArgs(s, a); err != nil {
		return nil, types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_ARGS: "+err.Error(), "")
	}
	return a, nil
}

// target is where one pod goes.
type target struct {
	Tenant, Slice, Cube string
	// IPAM is the IPAM object for the pod (empty: no addresses).
	IPAM json.RawMessage
	Pod  *endpoint.Pod
}

// errNotAllowed is a CNI error of edgenf-cni's own (codes from 100 are the
// plugin's): the pod may not join the tenant it asked for.
const errNotAllowed = 101

// resolve picks the pod's tenant, slice, cube and IPAM: the tenant the pod
// asks for (annotation, else CNI_ARGS), else the tenant whose namespaces
// hold the pod's, else the configuration's default. A tenant that lists
// namespaces takes pods of those namespaces only, whatever they ask; one
// that lists none takes a Kubernetes pod only as the network's default
// tenant (any pod's author may write an annotation naming it).
func (c *NetConf) resolve(a *cniArgs) (*target, error) {
	ann := c.RuntimeConfig.PodAnnotations
	ns := string(a.K8S_POD_NAMESPACE)
	t := &target{Tenant: ann[annotationTenant], Slice: ann[annotationSlice]}
	if t.Tenant == "" {
		t.Tenant = string(a.EDGENF_TENANT)
	}
	if t.Slice == "" {
		t.Slice = string(a.EDGENF_SLICE)
	}
	if ns != "" || a.K8S_POD_NAME != "" {
		t.Pod = &endpoint.Pod{Namespace: ns, Name: string(a.K8S_POD_NAME), UID: string(a.K8S_POD_UID)}
	}
	if t.Tenant == "" && ns != "" {
		var hits []string
		for _, name := range slices.Sorted(maps.Keys(c.Tenants)) {
			if matchAny(c.Tenants[name].Namespaces, ns) {
				hits = append(hits, name)
			}
		}
		if len(hits) > 1 {
			return nil, types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("namespace %q is listed by tenants %s: a pod there must say which (annotation %s)", ns, strings.Join(hits, ", "), annotationTenant), "")
		}
		if len(hits) == 1 {
			t.Tenant = hits[0]
		}
	}
	if t.Tenant == "" {
		t.Tenant = c.Tenant
	}
	tc := c.Tenants[t.Tenant]
	if tc == nil {
		if t.Tenant != c.Tenant || c.Cube == "" {
			if t.Tenant == "" {
				return nil, types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("%s: no tenant: annotate the pod %s, list its namespace in a tenant's namespaces, or set the network's tenant", podName(t.Pod), annotationTenant), "")
			}
			return nil, types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("tenant %q is not one of network %s's tenants (%s)", t.Tenant, c.Name, strings.Join(c.tenantNames(), ", ")), "")
		}
		tc = &TenantConf{Cube: c.Cube}
	}
	switch {
	case len(tc.Namespaces) > 0 && !matchAny(tc.Namespaces, ns):
		return nil, types.NewError(errNotAllowed, fmt.Sprintf("%s may not join tenant %s: it takes pods of namespaces %s only", podName(t.Pod), t.Tenant, strings.Join(tc.Namespaces, ", ")), "")
	case len(tc.Namespaces) == 0 && ns != "" && t.Tenant != c.Tenant:
		// A Kubernetes pod's author writes its annotations, the API
		// server its namespace: only the namespace may admit it.
		return nil, types.NewError(errNotAllowed, fmt.Sprintf("%s may not join tenant %s: the tenant lists no namespaces, so it takes Kubernetes pods only as the network's default tenant (list the namespaces whose pods it takes in tenants.%s.namespaces, \"*\" for all)", podName(t.Pod), t.Tenant, t.Tenant), "")
	}
	t.Cube, t.IPAM = tc.Cube, c.ipam
	if len(tc.IPAM) > 0 {
		t.IPAM = tc.IPAM
	}
	if t.Slice != "" {
		s := tc.Slices[t.Slice]
		if s == nil {
			return nil, types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("tenant %s has no slice %q in network %s (slices: %s)", t.Tenant, t.Slice, c.Name, strings.Join(slices.Sorted(maps.Keys(tc.Slices)), ", ")), "")
		}
		if s.Cube != "" {
			t.Cube = s.Cube
		}
		if len(s.IPAM) > 0 {
			t.IPAM = s.IPAM
		}
	}
	if string(bytes.TrimSpace(t.IPAM)) == "{}" || string(t.IPAM) == "null" {
		t.IPAM = nil
	}
	return t, nil
}

// ipamOf is the IPAM object of an endpoint made earlier (for DEL and GC):
// its tenant's and slice's, as the configuration says now; the network's
// if the configuration no longer lists them.
func (c *NetConf) ipamOf(tenant, slice string) json.RawMessage {
	out := c.ipam
	if tc := c.Tenants[tenant]; tc != nil {
		if len(tc.IPAM) > 0 {
			out = tc.IPAM
		}
		if s := tc.Slices[slice]; s != nil && len(s.IPAM) > 0 {
			out = s.IPAM
		}
	}
	if string(bytes.TrimSpace(out)) == "{}" || string(out) == "null" {
		return nil
	}
	return out
}

// ipamConfigs lists every distinct IPAM object of the configuration.
func (c *NetConf) ipamConfigs() []json.RawMessage {
	var out []json.RawMessage
	add := func(raw json.RawMessage) {
		if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "{}" || string(raw) == "null" {
			return
		}
		for _, o := range out {
			if bytes.Equal(o, raw) {
				return
			}
		}
		out = append(out, raw)
	}
	add(c.ipam)
	for _, name := range slices.Sorted(maps.Keys(c.Tenants)) {
		tc := c.Tenants[name]
		add(tc.IPAM)
		for _, sn := range slices.Sorted(maps.Keys(tc.Slices)) {
			add(tc.Slices[sn].IPAM)
		}
	}
	return out
}

func (c *NetConf) tenantNames() []string {
	names := slices.Sorted(maps.Keys(c.Tenants))
	if c.Tenant != "" && c.Tenants[c.Tenant] == nil {
		names = append(names, c.Tenant)
	}
	return names
}

// endpointName names a CNI attachment (network, container, interface in
// the pod) on this node: the endpoint, its cube port and its host
// interface are all called this. 48 bits of a hash: collisions among the
// pods of one node are out of reach.
func endpointName(network, containerID, ifName string) string {
	h := sha256.Sum256([]byte(network + "\x00" + containerID + "\x00" + ifName))
	return "enf" + hex.EncodeToString(h[:6])
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

func podName(p *endpoint.Pod) string {
	if p == nil || p.Name == "" {
		return "the container"
	}
	return "pod " + p.Namespace + "/" + p.Name
}
