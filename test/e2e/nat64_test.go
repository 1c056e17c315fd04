package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/testenv"
)

// TestCLINAT64: a nat64 cube and the router around it are set up with the
// CLI and with a topology file (a network-specific prefix, an RA with RDNSS
// and MTU options); its status view shows the settings in use; bad settings
// are refused naming the field, and leave the state as it was.
func TestCLINAT64(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	d.cli("cube", "add", "r1", "router")
	d.cli("port", "add", "r1", "lan", "--ip", "2001:db8:1::1/64", "--ip", "198.19.65.1/30")
	d.cli("table", "add", "r1", "routes", "prefix=198.19.64.0/24", "next_hop=198.19.65.2", "port=lan")
	d.cli("table", "add", "r1", "arp", "ip=198.19.65.2", "mac=02:00:00:00:64:64")
	d.cli("cube", "add", "n64", "nat64", "--set", "pool=198.19.64.1-198.19.64.4")
	d.cli("attach", "n64", "r1:lan")
	var st struct {
		AttachedTo string `json:"attached_to"`
		Prefix     string `json:"prefix"`
		Pool       string `json:"pool"`
		PortRange  string `json:"port_range"`
	}
	d.json(&st, "view", "n64", "status")
	if st.AttachedTo != "r1:lan" || st.Prefix != "64:ff9b::/96" || st.Pool != "198.19.64.1-198.19.64.4" || st.PortRange != "1024-65535" {
		t.Fatalf("status %+v", st)
	}

	before := d.cli("get", "topology", "-o", "json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cube", "add", "n65", "nat64"}, "pool: required"},
		{[]string{"cube", "add", "n65", "nat64", "--set", "pool=198.19.64.9-198.19.64.1"}, "inverted range"},
		{[]string{"cube", "add", "n65", "nat64", "--set", "pool=198.19.64.1", "--set", "prefix=64:ff9b::/80"}, "prefix"},
		{[]string{"cube", "add", "n65", "nat64", "--set", "pool=198.19.64.1", "--set", "prefix=64:ff9b::1/96"}, "did you mean 64:ff9b::/96?"},
		{[]string{"cube", "add", "n65", "nat64", "--set", "pool=127.0.0.1"}, "loopback"},
		{[]string{"table", "add", "r1", "ra", "--json", `{"port":"lan","dns":["ff02::1"]}`}, "dns[0]: ff02::1 is not a unicast address"},
		{[]string{"table", "add", "r1", "ra", "--json", `{"port":"lan","mtu":1000}`}, "mtu: 1000: an IPv6 link MTU is 1280..65535"},
	} {
		out, err := d.try(c.args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("`edgenf %s`: %v, output lacks %q:\n%s", strings.Join(c.args, " "), err, c.want, out)
		}
		if after := d.cli("get", "topology", "-o", "json"); after != before {
			t.Fatalf("`edgenf %s` changed the state", strings.Join(c.args, " "))
		}
	}

	file := filepath.Join(t.TempDir(), "nat64.yaml")
	if err := os.WriteFile(file, []byte(`cubes:
  - name: r1
    type: router
    ports:
      - {name: lan, addresses: ["2001:db8:1::1/64", "198.19.65.1/30"]}
    tables:
      routes:
        - {prefix: 198.19.64.0/24, next_hop: 198.19.65.2, port: lan}
      arp:
        - {ip: 198.19.65.2, mac: "02:00:00:00:64:64"}
      ra:
        - {port: lan, interval: 60, mtu: 1400, dns: ["2001:db8::53"]}
  - name: n64
    type: nat64
    config: {prefix: "2001:db8:64::/96", pool: "198.19.64.1-198.19.64.8", timeouts: {udp: 120}}
attachments:
  - {cube: n64, point: "r1:lan"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	d.cli("apply", "-f", file)
	d.json(&st, "view", "n64", "status")
	if st.Prefix != "2001:db8:64::/96" || st.Pool != "198.19.64.1-198.19.64.8" {
		t.Fatalf("status after apply %+v", st)
	}
	if out := d.cli("table", "list", "r1", "ra", "-o", "json"); !strings.Contains(out, `"2001:db8::53"`) || !strings.Contains(out, `"mtu": 1400`) && !strings.Contains(out, `"mtu":1400`) {
		t.Fatalf("router advertisements after apply:\n%s", out)
	}
}
