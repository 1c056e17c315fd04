package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// The cost estimate of a topology's chains comes with a dry run of apply,
// and with -core-budget-ns the daemon refuses a change whose chains would
// cost more than the budget, saying by how much, and keeps what it ran.
func TestEstimateDryRunAndCoreBudget(t *testing.T) {
	testenv.E2E(t)
	_, _, _, ra, rb := twoHosts(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bridge := fmt.Sprintf(`cubes:
  - name: br
    type: bridge
    ports:
      - {name: p0, peer: %s}
      - {name: p1, peer: %s}
`, ra, rb)
	small := write("small.yaml", bridge)
	big := write("big.yaml", bridge+`  - {name: fw, type: firewall}
  - {name: dd, type: ddos}
  - {name: mon, type: monitor}
attachments:
  - {cube: dd, point: br:p0}
  - {cube: fw, point: br:p0}
  - {cube: mon, point: br:p1}
`)
	type dryRun struct {
		Changes  []json.RawMessage `json:"changes"`
		Estimate []struct {
			ID   string  `json:"id"`
			NS   float64 `json:"ns"`
			Hops []struct {
				Cube string  `json:"cube"`
				NS   float64 `json:"ns"`
			} `json:"hops"`
		} `json:"estimate"`
	}
	d := startDaemon(t)
	dearest := func(file string) (float64, string) {
		var out dryRun
		d.json(&out, "apply", "-f", file, "--dry-run")
		if len(out.Estimate) != 2 {
			t.Fatalf("%s: %d chains estimated, want 2 (one each way): %+v", file, len(out.Estimate), out)
		}
		max, id := 0.0, ""
		for _, c := range out.Estimate {
			sum := 0.0
			for _, h := range c.Hops {
				sum += h.NS
			}
			if c.NS <= 0 || sum < c.NS-0.01 || sum > c.NS+0.01 {
				t.Fatalf("%s: chain %s costs %.2f ns, its hops %.2f", file, c.ID, c.NS, sum)
			}
			if c.NS > max {
				max, id = c.NS, c.ID
			}
		}
		return max, id
	}
	eSmall, _ := dearest(small)
	eBig, bigChain := dearest(big)
	if eBig <= eSmall {
		t.Fatalf("a bridge with a firewall, a ddos and a monitor on its ports is estimated at %.1f ns, the bridge alone %.1f", eBig, eSmall)
	}
	text := d.cli("apply", "-f", big, "--dry-run")
	if !strings.Contains(text, "estimated cost per packet") || !strings.Contains(text, "chain "+bigChain) || !strings.Contains(text, "per core") {
		t.Fatalf("dry run output:\n%s", text)
	}
	d.stop()

	// the budget as the flag gives it, so that the refusal's "%.0f"
	// rounds the same value as the test's
	budget := math.Round((eSmall+eBig)/2*10) / 10
	d = startDaemon(t, "-core-budget-ns", fmt.Sprintf("%.1f", budget))
	d.cli("apply", "-f", small)
	out, err := d.try("apply", "-f", big)
	if err == nil || !strings.Contains(out, "refused") || !strings.Contains(out, fmt.Sprintf("core budget of %.0f ns", budget)) || !strings.Contains(out, bigChain) {
		t.Fatalf("a change over the core budget: %v\n%s", err, out)
	}
	var topo struct {
		Cubes []struct {
			Name string `json:"name"`
		} `json:"cubes"`
	}
	d.json(&topo, "get", "topology")
	if len(topo.Cubes) != 1 || topo.Cubes[0].Name != "br" {
		t.Fatalf("after the refused change the daemon runs %+v, want the bridge alone", topo.Cubes)
	}
	// a dry run of the refused change is refused too, with the numbers
	if out, err := d.try("apply", "-f", big, "--dry-run"); err == nil || !strings.Contains(out, "would cost") {
		t.Fatalf("dry run over the budget: %v\n%s", err, out)
	}
}

// A slice's own budget_ns is enforced without -core-budget-ns: a dry run
// estimates each slice as its dearest chain; a change that pushes the
// slice's chain past its budget, or sets a budget the slice is already
// over, is refused naming the slice and the numbers, and the daemon keeps
// what it ran. The same for a slice led into by a port of the slicer and
// for one that names its chain's entry (no port: the chain comes back to
// the slicer by that entry).
func TestSliceBudget(t *testing.T) {
	testenv.E2E(t)
	t.Run("port", func(t *testing.T) { testSliceBudget(t, false) })
	t.Run("chain", func(t *testing.T) { testSliceBudget(t, true) })
}

func testSliceBudget(t *testing.T, chain bool) {
	lab := netlab.NewT(t)
	entry, _, err := lab.RootVeth("sa", "sb")
	if err != nil {
		t.Fatal(err)
	}
	exit, _, err := lab.RootVeth("sc", "sd")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// the slice's way into gpf: the slicer's port gold, or gpf:p0 itself
	way, slicePort, owner := `port: gold`, `
      - {name: gold, peer: "gpf:p0"}`, ""
	if chain {
		way, slicePort, owner = `chain: "gpf:p0"`, "", "\n    tenant: gold"
	}
	file := func(name string, budget float64, firewall bool) string {
		body := fmt.Sprintf(`cubes:
  - name: edge
    type: slicer
    hook: tc
    config: {uplink: up}
    ports:
      - {name: up, peer: %s}%s
    tables:
      slices:
        - {name: gold, id: 1, tenant: gold, %s, rules: [{vlan: 10}], budget_ns: %g}
  - name: gpf
    type: portfwd
    hook: tc%s
    ports:
      - {name: p0}
      - {name: p1, peer: %s}
    tables:
      rules:
        - {in_port: p0, out_port: p1}
        - {in_port: p1, out_port: p0}
`, entry, slicePort, way, budget, owner, exit)
		if firewall {
			body += `  - {name: gfw, type: firewall, hook: tc` + strings.ReplaceAll(owner, "\n    ", ", ") + `}
attachments:
  - {cube: gfw, point: "gpf:p0"}
`
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	d := startDaemon(t)
	sliceNS := func(path string) float64 {
		var out struct {
			Estimate []struct {
				Slice string  `json:"slice"`
				NS    float64 `json:"ns"`
			} `json:"estimate"`
		}
		d.json(&out, "apply", "-f", path, "--dry-run")
		max := 0.0
		for _, c := range out.Estimate {
			if c.Slice != "edge/gold" {
				t.Fatalf("%s: chain of slice %q, want edge/gold: %+v", path, c.Slice, out.Estimate)
			}
			max = math.Max(max, c.NS)
		}
		if max <= 0 {
			t.Fatalf("%s: no estimate for slice gold: %+v", path, out.Estimate)
		}
		return max
	}
	small, big := sliceNS(file("small.yaml", 100000, false)), sliceNS(file("big.yaml", 100000, true))
	if big <= small {
		t.Fatalf("slice gold with a firewall is estimated at %.1f ns, without %.1f", big, small)
	}
	budget := math.Round((small + big) / 2)
	d.cli("apply", "-f", file("small.yaml", budget, false))
	out, err := d.try("apply", "-f", file("big.yaml", budget, true))
	if err == nil || !strings.Contains(out, "slice edge/gold: chain") || !strings.Contains(out, fmt.Sprintf("over the slice's budget of %.0f ns", budget)) {
		t.Fatalf("a change over the slice's budget: %v\n%s", err, out)
	}
	out, err = d.try("apply", "-f", file("tight.yaml", 1, false))
	if err == nil || !strings.Contains(out, "over the slice's budget of 1 ns") {
		t.Fatalf("a budget the slice is over: %v\n%s", err, out)
	}
	var topo struct {
		Cubes []struct {
			Name   string                       `json:"name"`
			Tables map[string][]json.RawMessage `json:"tables"`
		} `json:"cubes"`
	}
	d.json(&topo, "get", "topology")
	var names []string
	for _, c := range topo.Cubes {
		names = append(names, c.Name)
		if c.Name == "edge" {
			var sl struct {
				BudgetNS float64 `json:"budget_ns"`
			}
			for _, raw := range c.Tables["slices"] {
				json.Unmarshal(raw, &sl)
			}
			if sl.BudgetNS != budget {
				t.Fatalf("after the refused changes slice gold's budget is %v, want %v", sl.BudgetNS, budget)
			}
		}
	}
	if strings.Join(names, ",") != "edge,gpf" {
		t.Fatalf("after the refused changes the daemon runs %v, want edge and gpf", names)
	}
}
