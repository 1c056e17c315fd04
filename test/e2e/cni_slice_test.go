package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// Pods that ask for a slice (annotation edgenf.io/slice) land in the
// slice's chain with the slice's addresses; the slicer in front of the
// chains, declared by the node's file with a rule on those addresses,
// classifies the traffic to them into the slice and polices it at the
// slice's rate (docs/kubernetes.md, Limits: slices).
func TestCNIPodsInASlice(t *testing.T) {
	testenv.E2E(t)
	lab := netlab.NewT(t)
	d := startDaemon(t)
	trunk, err := lab.Host("tr")
	if err != nil {
		t.Fatal(err)
	}
	up, err := lab.Veth(trunk, "eth0", "t", "198.18.40.254/24")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "node.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf(`cubes:
  - name: edge
    type: slicer
    hook: xdp
    config: {uplink: up}
    ports:
      - {name: up, peer: %s}
      - {name: cctv, peer: "redcctv:sl"}
    tables:
      slices:
        - {name: cctv, id: 1, tenant: red, port: cctv, rules: [{dst: 198.18.40.0/24}], rate_pps: 200}
  - {name: redcctv, type: bridge, tenant: red, ports: [{name: sl, peer: "edge:cctv"}]}
`, up)), 0o600)
	if out, err := d.try("apply", "-f", file); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	r := newCNIRuntime(t, d, fmt.Sprintf(`{"cniVersion": "1.1.0", "name": "sliced", "plugins": [{"type": "edgenf-cni", "socket": %q,
	  "capabilities": {"io.kubernetes.cri.pod-annotations": true},
	  "tenants": {"red": {"cube": "redcctv", "namespaces": ["red"],
	    "slices": {"cctv": {"cube": "redcctv", "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": "198.18.40.0/24"}]]}}}}}}]}`,
		d.socket, t.TempDir()))
	pods := makePods(t, lab, "red", 0, 2)
	trunkMAC, err := trunk.MAC("eth0")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		p.ann = map[string]string{"edgenf.io/slice": "cctv"}
		if err := r.add(p); err != nil {
			t.Fatalf("ADD %s: %v", p, err)
		}
		// the slicer classifies IP by its rules; ARP matches none of
		// them (and the slicer has no default slice): static neighbours,
		// as on a trunk whose stations are configured
		if err := p.h.SetNeigh("eth0", "198.18.40.254", trunkMAC.String()); err != nil {
			t.Fatal(err)
		}
		if err := trunk.SetNeigh("eth0", p.ip(4), p.res.Interfaces[1].Mac); err != nil {
			t.Fatal(err)
		}
	}
	// a bridge floods nothing into a port peered with a cube (docs/nf/bridge.md):
	// the trunk's station is where the slicer is
	d.cli("table", "add", "redcctv", "fdb", "mac="+trunkMAC.String(), "port=sl")
	for _, e := range d.endpoints() {
		if e.Slice != "cctv" || e.Cube != "redcctv" {
			t.Errorf("endpoint %s: slice %q on %s", e.Name, e.Slice, e.Cube)
		}
	}
	reaches(t, pods[0], "198.18.40.254")
	reaches(t, pods[1], pods[0].ip(4))
	var before, after struct {
		Status struct {
			InPackets     uint64 `json:"in_packets"`
			PolicePackets uint64 `json:"police_drop_packets"`
		} `json:"status"`
	}
	d.json(&before, "slice", "get", "cctv")
	if before.Status.InPackets == 0 {
		t.Errorf("the pings to the slice's pods were not classified into it: %+v", before)
	}
	// 600 datagrams in 0.3 s into a slice policed at 200 packets/s
	out := &pod{h: trunk, name: "trunk"}
	sent, got, err := netlab.UDPFlow(ctx(t, 30*time.Second), out.h, pods[0].h, pods[0].ip(4), 5000, 600, 100, 2000)
	if err != nil {
		t.Fatal(err)
	}
	d.json(&after, "slice", "get", "cctv")
	if got == 0 || got > sent/2 || after.Status.PolicePackets-before.Status.PolicePackets < uint64(sent/2) {
		t.Errorf("%d of %d datagrams reached the slice's pod at 200 packets/s; slice counters %+v", got, sent, after.Status)
	}
	for _, p := range pods {
		if err := r.del(p); err != nil {
			t.Errorf("DEL %s: %v", p, err)
		}
	}
}
