package engine_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/state"
	"github.com/edgenf/edgenf/internal/tenant"
)

// A pod's ADD or DEL is journalled like any topology change: the state
// file is not rewritten for it (a node plugging in hundreds of pods would
// write the whole state each time), and a daemon that stops without
// folding the journal in (killed) finds every endpoint again.
func TestEndpointsAreJournalled(t *testing.T) {
	lab := netlab.NewT(t)
	var ifs []string
	for i := range 3 {
		h, _, err := lab.RootVeth(fmt.Sprintf("j%d", i), fmt.Sprintf("k%d", i))
		if err != nil {
			t.Fatal(err)
		}
		ifs = append(ifs, h)
	}
	cfg := restartable(t)
	e := openAt(t, cfg)
	defer func() { e.Close() }()
	if _, err := e.SetTenant(tenant.Tenant{Name: "red"}); err != nil {
		t.Fatal(err)
	}
	update(t, e, func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "redbr", Type: "bridge", Tenant: "red"})
	})
	if err := e.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	snapshot, err := os.ReadFile(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	eps := make([]*endpoint.Endpoint, len(ifs))
	for i, iface := range ifs {
		eps[i] = &endpoint.Endpoint{Name: fmt.Sprintf("enf00000000000%d", i), Tenant: "red", Cube: "redbr", Interface: iface,
			Network: "net", ContainerID: fmt.Sprintf("c%d", i), IfName: "eth0", Addresses: []string{fmt.Sprintf("198.18.0.%d/24", 10+i)}}
		if _, err := e.AddEndpoint(eps[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.DeleteEndpoint(eps[1].Name); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(cfg.StateFile); !bytes.Equal(now, snapshot) {
		t.Fatalf("endpoint changes rewrote the state file")
	}
	journal, _ := os.ReadFile(state.JournalPath(cfg.StateFile))
	if n := bytes.Count(journal, []byte(`"kind":"endpoint"`)); n != 4 {
		t.Fatalf("%d endpoint records in the journal, want 4 (3 ADD, 1 DEL):\n%s", n, journal)
	}

	// Stopped without a checkpoint: the journal alone brings them back.
	e.Close()
	e = openAt(t, cfg)
	check := func(when string) {
		t.Helper()
		got := e.Endpoints(tenant.Admin)
		if len(got) != 2 || !got[0].Equal(eps[0]) || !got[1].Equal(eps[2]) {
			t.Fatalf("%s: endpoints %v, want %s and %s", when, got, eps[0].Name, eps[2].Name)
		}
		c, _ := e.Cube(tenant.Admin, "redbr")
		if c.Port(eps[0].Name) == nil || c.Port(eps[1].Name) != nil || c.Port(eps[2].Name) == nil {
			t.Fatalf("%s: ports %+v", when, c.Ports)
		}
	}
	check("after a restart from the journal")

	// Folded into the snapshot, they stay.
	if err := e.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if journal, _ := os.ReadFile(state.JournalPath(cfg.StateFile)); len(journal) != 0 {
		t.Fatalf("journal not emptied by the checkpoint:\n%s", journal)
	}
	e.Close()
	e = openAt(t, cfg)
	check("after a restart from the snapshot")
}
