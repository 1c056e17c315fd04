package e2e

import (
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/testenv"
)

// The CLI takes IPv6 wherever it takes IPv4: firewall rules, NPTv6 rules,
// lb services and backends, router ports, routes, neighbours and
// advertisements; bad IPv6 input is refused naming the field, and leaves the
// state as it was.
func TestCLITakesIPv6(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	d.cli("cube", "add", "fw1", "firewall", "--set", "ingress_policy=drop")
	d.cli("table", "add", "fw1", "ingress", "id=10", "src=2001:db8:100::/48", "proto=tcp", "dport=22", "action=accept")
	d.cli("table", "add", "fw1", "ingress", "id=20", "proto=icmpv6", "icmp_type=echo-request", "action=accept")
	d.cli("table", "add", "fw1", "ingress", "id=30", "family=ipv6", "proto=udp", "dport=546", "action=accept")
	d.cli("cube", "add", "nat1", "nat")
	d.cli("table", "add", "nat1", "npt", "id=1", "internal=2001:db8:1::/48", "external=2001:db8:99::/48")
	d.cli("cube", "add", "lb1", "lb")
	d.cli("port", "add", "lb1", "front", "--ip", "198.18.1.1/24", "--ip", "2001:db8:1::1/64")
	d.cli("port", "add", "lb1", "b1", "--ip", "2001:db8:2::1/64")
	d.cli("table", "add", "lb1", "services", "--json",
		`{"vip":"2001:db8:9::100","port":80,"mode":"nat","backends":[{"name":"web6","address":"2001:db8:2::11","mac":"02:00:00:00:be:01","port":"b1"}]}`)
	d.cli("table", "add", "lb1", "backends", "service=2001:db8:9::100:tcp:80", "name=web7", "address=2001:db8:2::12",
		"mac=02:00:00:00:be:02", "port=b1")

	d.cli("cube", "add", "r1", "router")
	d.cli("port", "add", "r1", "lan", "--ip", "198.18.0.1/24", "--ip", "2001:db8:a::1/64")
	d.cli("port", "add", "r1", "wan", "--ip", "2001:db8:1::1/64")
	d.cli("table", "add", "r1", "routes", "prefix=::/0", "next_hop=2001:db8:1::fe")
	d.cli("table", "add", "r1", "routes", "prefix=2001:db8:77::/48", "next_hop=fe80::1", "port=wan")
	d.cli("table", "add", "r1", "arp", "ip=2001:db8:1::fe", "mac=02:00:00:00:01:fe")
	d.cli("table", "add", "r1", "ra", "port=lan", "interval=60")
	if out := d.cli("view", "r1", "routes", "-o", "json"); !strings.Contains(out, `"2001:db8:a::/64"`) || !strings.Contains(out, `"fe80::1"`) {
		t.Errorf("router routes view:\n%s", out)
	}

	out := d.cli("table", "list", "fw1", "ingress", "-o", "json")
	for _, w := range []string{`"2001:db8:100::/48"`, `"icmpv6"`, `"echo-request"`, `"ipv6"`} {
		if !strings.Contains(out, w) {
			t.Errorf("firewall rules lack %s:\n%s", w, out)
		}
	}
	if out := d.cli("view", "lb1", "services", "-o", "json"); !strings.Contains(out, `"2001:db8:9::100:tcp:80"`) ||
		!strings.Contains(out, `"2001:db8:2::12"`) {
		t.Errorf("lb services view:\n%s", out)
	}

	before := d.cli("get", "topology", "-o", "json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "add", "fw1", "ingress", "id=40", "src=2001:db8::1/32", "action=drop"}, `src: "2001:db8::1/32" has host bits set (did you mean 2001:db8::/32?)`},
		{[]string{"table", "add", "fw1", "ingress", "id=40", "src=198.18.0.0/15", "dst=2001:db8::/32", "action=drop"}, "are of different address families"},
		{[]string{"table", "add", "fw1", "ingress", "id=40", "proto=icmp", "src=2001:db8::/32", "action=drop"}, "icmp is IPv4's: IPv6 rules want icmpv6"},
		{[]string{"table", "add", "nat1", "npt", "id=2", "internal=2001:db8:2::/56", "external=2001:db8:3::/56"}, "/56 is longer than /48"},
		{[]string{"table", "add", "nat1", "npt", "id=2", "internal=2001:db8:1::/48", "external=2001:db8:3::/48"}, "overlaps internal 2001:db8:1::/48 of rule 1"},
		{[]string{"table", "add", "lb1", "backends", "service=2001:db8:9::100:tcp:80", "name=web8", "address=198.18.2.13",
			"mac=02:00:00:00:be:03", "port=b1"}, "are of different address families"},
		{[]string{"port", "add", "r1", "dmz", "--ip", "fe80::1/64"}, "every port has its link-local address already"},
		{[]string{"table", "add", "r1", "routes", "prefix=2001:db8:78::/48", "next_hop=fe80::2"}, "required with the link-local next hop fe80::2"},
		{[]string{"table", "add", "r1", "routes", "prefix=2001:db8:79::/48", "next_hop=198.18.0.9"}, "are of different address families"},
		{[]string{"table", "add", "r1", "ra", "port=wan", "interval=2"}, "interval: 2 out of range 4..1800"},
	} {
		out, err := d.try(c.args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("`edgenf %s`: %v, output lacks %q:\n%s", strings.Join(c.args, " "), err, c.want, out)
		}
		if after := d.cli("get", "topology", "-o", "json"); after != before {
			t.Fatalf("`edgenf %s` changed the state", strings.Join(c.args, " "))
		}
	}
}
