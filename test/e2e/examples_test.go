package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"
	"gopkg.in/yaml.v3"
)

// TestExampleTopologies applies every file of examples/topologies to a real
// daemon with the CLI, one after the other (each replaces the last), with
// this test's interfaces in place of veth-a..veth-d and a free PFCP port:
// the daemon runs exactly the file's cubes, and applying the file again
// changes nothing.
func TestExampleTopologies(t *testing.T) {
	testenv.E2E(t)
	files, err := filepath.Glob("../../examples/topologies/*.yaml")
	if err != nil || len(files) < 10 {
		t.Fatalf("examples: %v %v", files, err)
	}
	d := startDaemon(t)
	lab := netlab.NewT(t)
	ifaces := map[string]string{}
	for _, pair := range [][2]string{{"a", "b"}, {"c", "d"}} {
		x, y, err := lab.RootVeth(pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		ifaces["veth-"+pair[0]], ifaces["veth-"+pair[1]] = x, y
	}
	pfcp := fmt.Sprintf("port: %d", nftest.FreeUDPPort(t))
	// The copies sit where the originals do relative to examples/p4, so
	// the programs they name (../p4/x.p4) resolve.
	dir := filepath.Join(t.TempDir(), "topologies")
	p4dir, err := filepath.Abs("../../examples/p4")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(p4dir, filepath.Join(filepath.Dir(dir), "p4")); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.NewReplacer("veth-a", ifaces["veth-a"], "veth-b", ifaces["veth-b"], "veth-c", ifaces["veth-c"],
				"veth-d", ifaces["veth-d"], "address: 127.0.0.88", "address: 127.0.0.1", "port: 8805", pfcp).Replace(string(b))
			var doc struct {
				Cubes []struct{ Name string }
			}
			if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, c := range doc.Cubes {
				want = append(want, c.Name)
			}
			path := filepath.Join(dir, filepath.Base(f))
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			d.cli("apply", "-f", path)
			if out := d.cli("apply", "-f", path, "--dry-run"); !strings.Contains(out, "no changes") {
				t.Errorf("applying %s again would change:\n%s", f, out)
			}
			var got struct {
				Cubes []struct{ Name string }
			}
			d.json(&got, "get", "topology")
			var names []string
			for _, c := range got.Cubes {
				names = append(names, c.Name)
			}
			slices.Sort(want)
			slices.Sort(names)
			if !slices.Equal(names, want) {
				t.Errorf("running cubes %v, the file has %v", names, want)
			}
		})
	}
}
