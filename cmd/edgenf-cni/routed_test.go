package main

import (
	"net"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
)

// A routed pod's result: host addresses through the port's gateways; the
// IPAM's routes through them (its subnet gateway is not on the pod's
// link); a default route for a family the IPAM gave none for; nothing for
// a family the pod has no address of.
func TestRouteVia(t *testing.T) {
	cidr := func(s string) net.IPNet {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		return *n
	}
	res := &current.Result{
		IPs: []*current.IPConfig{
			{Address: cidr("198.18.5.7/24"), Gateway: net.ParseIP("198.18.5.1")},
			{Address: cidr("2001:db8:5::7/64"), Gateway: net.ParseIP("2001:db8:5::1")},
		},
		Routes: []*types.Route{{Dst: cidr("198.19.0.0/16"), GW: net.ParseIP("198.18.5.1")}},
	}
	if err := routeVia(res, []string{"169.254.1.4", "fe80::72:74ff:fe01:203"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"198.18.5.7/32 via 169.254.1.4", "2001:db8:5::7/128 via fe80::72:74ff:fe01:203"}
	for i, ipc := range res.IPs {
		if got := ipc.Address.String() + " via " + ipc.Gateway.String(); got != want[i] {
			t.Errorf("address %d: %s, want %s", i, got, want[i])
		}
	}
	wantRoutes := []string{"198.19.0.0/16 via 169.254.1.4", "::/0 via fe80::72:74ff:fe01:203"}
	if len(res.Routes) != len(wantRoutes) {
		t.Fatalf("routes %v, want %v", res.Routes, wantRoutes)
	}
	for i, r := range res.Routes {
		if got := r.Dst.String() + " via " + r.GW.String(); got != wantRoutes[i] {
			t.Errorf("route %d: %s, want %s", i, got, wantRoutes[i])
		}
	}

	// IPv4 only, IPAM routes of both families: the IPv6 one is dropped
	v4 := &current.Result{IPs: []*current.IPConfig{{Address: cidr("198.18.5.8/24")}},
		Routes: []*types.Route{{Dst: cidr("0.0.0.0/0")}, {Dst: cidr("::/0")}}}
	if err := routeVia(v4, []string{"169.254.1.5"}); err != nil {
		t.Fatal(err)
	}
	if len(v4.Routes) != 1 || v4.Routes[0].GW.String() != "169.254.1.5" {
		t.Errorf("IPv4-only pod's routes: %v", v4.Routes)
	}
	// an address of a family edgenfd gave no gateway for is an error
	if err := routeVia(&current.Result{IPs: []*current.IPConfig{{Address: cidr("2001:db8::9/64")}}}, []string{"169.254.1.6"}); err == nil {
		t.Error("an IPv6 address without an IPv6 gateway was accepted")
	}
}
