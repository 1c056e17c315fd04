package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
)

// TestRestartAdoptsInterfacePrograms: a restart over cubes it adopts keeps
// the programs on their peered interfaces as they are (the same program
// ids: nothing loaded, no link updated), writes their hops only, says so in
// the start report, and traffic flows on. Before, every interface's direct
// entry was loaded and attached again.
func TestRestartAdoptsInterfacePrograms(t *testing.T) {
	for i, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			if hook == datapath.TC && os.Getenv(datapath.TCAttachEnv) == string(datapath.TCAttachClassic) {
				t.Skip("classic tc filters are attached again at start")
			}
			cfg := restartable(t)
			e := openAt(t, cfg)
			net := fmt.Sprintf("198.18.%d", 46+i)
			a, _, va, vb := twoHostsThroughTwoCubes(t, e, hook, net)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := a.Ping(ctx, net+".3", 2); err != nil {
				t.Fatalf("before the restart: %v", err)
			}
			links := map[string]string{}
			ids := map[string]uint32{}
			for _, v := range []string{va, vb} {
				links[v] = filepath.Join(cfg.PinRoot, "ifaces", v+"_"+string(hook)+"_ingress", "link")
				ids[v] = progIDOf(t, links[v])
			}
			e.Close()
			e = openAt(t, cfg)
			defer e.Close()
			if got := e.Started(); got != (engine.StartReport{Adopted: 2, InterfacesAdopted: 2}) {
				t.Fatalf("start %+v, want both cubes and both interface programs adopted", got)
			}
			for v, ln := range links {
				if got := progIDOf(t, ln); got != ids[v] {
					t.Errorf("%s runs program %d after the restart, %d before: attached again", v, got, ids[v])
				}
			}
			if err := a.Ping(ctx, net+".3", 2); err != nil {
				t.Fatalf("after the restart: %v", err)
			}
		})
	}
}

func progIDOf(t *testing.T, linkPath string) uint32 {
	t.Helper()
	p := linkProgram(t, linkPath)
	defer p.Close()
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return uint32(id)
}
