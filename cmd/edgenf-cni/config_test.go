package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
)

const testConf = `{
  "cniVersion": "1.1.0", "name": "edge", "type": "edgenf-cni",
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "198.18.0.0/24"}]]},
  "tenant": "red",
  "tenants": {
    "red":  {"cube": "red-br", "namespaces": ["red", "red-*"],
             "slices": {"cctv": {"cube": "red-cctv", "ipam": {"type": "host-local", "ranges": [[{"subnet": "198.18.9.0/24"}]]}}}},
    "blue": {"cube": "blue-br", "ipam": {"type": "host-local", "ranges": [[{"subnet": "198.18.1.0/24"}]]}},
    "ops":  {"cube": "ops-br", "namespaces": ["ops", "shop"]}
  }
}`

func code(err error) uint {
	var te *types.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

// The pod's tenant: the one it asks for (annotation, then CNI_ARGS), else
// the one whose namespaces hold its namespace, else the network's default;
// a tenant with namespaces takes no pod from elsewhere, whatever it asks; a
// tenant without takes no Kubernetes pod unless it is the default.
func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		ann        map[string]string
		tenant     string
		cube       string
		ipam       string
		code       uint
	}{
		{name: "default tenant", args: "K8S_POD_NAMESPACE=red;K8S_POD_NAME=a", tenant: "red", cube: "red-br", ipam: "198.18.0.0"},
		{name: "namespace pattern", args: "K8S_POD_NAMESPACE=red-apps;K8S_POD_NAME=a", tenant: "red", cube: "red-br"},
		{name: "namespace picks tenant", args: "K8S_POD_NAMESPACE=ops;K8S_POD_NAME=a", tenant: "ops", cube: "ops-br"},
		{name: "annotation", args: "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=a", ann: map[string]string{annotationTenant: "ops"}, tenant: "ops", cube: "ops-br"},
		{name: "annotation outside Kubernetes", args: "K8S_POD_NAME=a", ann: map[string]string{annotationTenant: "blue"}, tenant: "blue", cube: "blue-br", ipam: "198.18.1.0"},
		{name: "a Kubernetes pod asks for a tenant without namespaces", args: "K8S_POD_NAMESPACE=x;K8S_POD_NAME=a", ann: map[string]string{annotationTenant: "blue"}, code: errNotAllowed},
		{name: "a Kubernetes pod asks for the default tenant", args: "K8S_POD_NAMESPACE=red;K8S_POD_NAME=a", ann: map[string]string{annotationTenant: "red"}, tenant: "red"},
		{name: "a pod of another namespace asks by CNI_ARGS", args: "K8S_POD_NAMESPACE=x;EDGENF_TENANT=blue", code: errNotAllowed},
		{name: "CNI_ARGS", args: "IgnoreUnknown=1;EDGENF_TENANT=blue;OTHER=1", tenant: "blue", cube: "blue-br"},
		{name: "annotation wins over args", args: "IgnoreUnknown=1;EDGENF_TENANT=blue;K8S_POD_NAMESPACE=red", ann: map[string]string{annotationTenant: "red"}, tenant: "red"},
		{name: "slice", args: "K8S_POD_NAMESPACE=red;K8S_POD_NAME=cam", ann: map[string]string{annotationSlice: "cctv"}, tenant: "red", cube: "red-cctv", ipam: "198.18.9.0"},
		{name: "slice by args", args: "EDGENF_SLICE=cctv;K8S_POD_NAMESPACE=red", tenant: "red", cube: "red-cctv"},
		{name: "a pod of another namespace asks for red", args: "K8S_POD_NAMESPACE=blue;K8S_POD_NAME=x", ann: map[string]string{annotationTenant: "red"}, code: errNotAllowed},
		{name: "no namespace asks for ops", args: "EDGENF_TENANT=ops", code: errNotAllowed},
		{name: "unknown tenant", args: "EDGENF_TENANT=green", code: types.ErrInvalidNetworkConfig},
		{name: "unknown slice", args: "K8S_POD_NAMESPACE=red", ann: map[string]string{annotationSlice: "x"}, code: types.ErrInvalidNetworkConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConf([]byte(testConf))
			if err != nil {
				t.Fatal(err)
			}
			c.RuntimeConfig.PodAnnotations = tc.ann
			a, err := parseArgs(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.resolve(a)
			if tc.code != 0 {
				if code(err) != tc.code {
					t.Fatalf("got %v (code %d), want code %d", err, code(err), tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Tenant != tc.tenant || (tc.cube != "" && got.Cube != tc.cube) || (tc.ipam != "" && !strings.Contains(string(got.IPAM), tc.ipam)) {
				t.Fatalf("got %+v ipam %s", got, got.IPAM)
			}
		})
	}
}

// Bad configurations get the CNI code that says what is wrong.
func TestParseConfErrors(t *testing.T) {
	for _, tc := range []struct {
		conf string
		code uint
		msg  string
	}{
		{`{not json`, types.ErrDecodingFailure, "not a JSON object"},
		{`{"cniVersion":"1.1.0","name":"n","type":"edgenf-cni","cube":"c","tenats":{}}`, types.ErrUnsupportedField, `unknown field "tenats"`},
		{`{"cniVersion":"1.1.0","name":"n","type":"edgenf-cni","tenants":{"red":{"cube":"c","namespace":["x"]}}}`, types.ErrDecodingFailure, "namespace"},
		{`{"cniVersion":"1.1.0","name":"n","type":"edgenf-cni"}`, types.ErrInvalidNetworkConfig, "no cube"},
		{`{"cniVersion":"1.1.0","name":"n","type":"edgenf-cni","tenant":"red"}`, types.ErrInvalidNetworkConfig, "no cube for it"},
		{`{"cniVersion":"1.1.0","name":"n","type":"edgenf-cni","cube":"bad name"}`, types.ErrInvalidNetworkConfig, "invalid name"},
		{`{"cniVersion":"1.1.0","name":"n","type":"edgenf-cni","cube":"c","mtu":20}`, types.ErrInvalidNetworkConfig, "mtu"},
		{`{"cniVersion":"1.1.0","name":"n","type":"edgenf-cni","cube":"c","socket":"rel.sock"}`, types.ErrInvalidNetworkConfig, "absolute"},
		{`{"cniVersion":"1.1.0","name":"n","type":"edgenf-cni","cube":"c","ipam":{"subnet":"x"}}`, types.ErrInvalidNetworkConfig, "type (the IPAM plugin) is required"},
		{`{"cniVersion":"1.1.0","name":"n","type":"edgenf-cni","cube":"c","ipam":{"type":"../../bin/sh"}}`, types.ErrInvalidNetworkConfig, "not a plugin name"},
		{`{"cniVersion":"1.1.0","name":"n","type":"edgenf-cni","tenants":{"red":{"cube":"c","namespaces":["[x"]}}}`, types.ErrInvalidNetworkConfig, "bad pattern"},
	} {
		_, err := parseConf([]byte(tc.conf))
		if code(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v (code %d), want code %d with %q", tc.conf, err, code(err), tc.code, tc.msg)
		}
	}
}

func TestEndpointName(t *testing.T) {
	a := endpointName("edge", "c1", "eth0")
	if len(a) > 15 || !strings.HasPrefix(a, "enf") {
		t.Fatalf("%q: not an interface name", a)
	}
	for _, other := range []string{endpointName("edge", "c1", "eth1"), endpointName("edge", "c2", "eth0"), endpointName("edge2", "c1", "eth0")} {
		if other == a {
			t.Fatalf("two attachments share %q", a)
		}
	}
	if endpointName("edge", "c1", "eth0") != a {
		t.Fatal("not stable")
	}
}

// A GC that does not list the live attachments removes nothing: without
// the list every pod of the network would look gone.
func TestGCNeedsValidAttachments(t *testing.T) {
	err := cmdGC(context.Background(), &skel.CmdArgs{StdinData: []byte(`{"cniVersion":"1.1.0","name":"n","type":"edgenf-cni","cube":"c","socket":"/nonexistent/edgenf.sock"}`)})
	if code(err) != types.ErrInvalidNetworkConfig || !strings.Contains(err.Error(), "valid-attachments") {
		t.Fatalf("GC without valid attachments: %v (code %d)", err, code(err))
	}
}
