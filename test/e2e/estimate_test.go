package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

	budget := (eSmall + eBig) / 2
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
