package telemetry

import (
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCollectorExportsKernelCounters: a frame through a cube shows in the
// port counters a scrape returns, with the per-type cube gauge, the
// cube's slow-path copy counter and the copy machine's counters.
func TestCollectorExportsKernelCounters(t *testing.T) {
	eng := nftest.Engine(t)
	nftest.MustUpdate(t, eng, func(tp *cube.Topology) error {
		for _, name := range []string{"c1", "sink"} {
			if err := tp.AddCube(&cube.Cube{Name: name, Type: "portfwd", Hook: datapath.XDP}); err != nil {
				return err
			}
		}
		if err := tp.AddPort("sink", cube.Port{Name: "p0", Index: 0}); err != nil {
			return err
		}
		if err := tp.AddPort("c1", cube.Port{Name: "p0", Index: 0}); err != nil {
			return err
		}
		return tp.AddPort("c1", cube.Port{Name: "p1", Index: 1, Peer: "sink:p0"})
	})
	if err := eng.ChangeEntries(tenant.Admin, "c1", "rules", func(tx *engine.EntryTx) error {
		_, err := tx.Put([]byte(`{"in_port": "p0", "out_port": "p1"}`))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := eng.Inject(tenant.Admin, "c1", "p0", nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, []byte("x")), false); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(eng, Everything))
	want := `
# HELP edgenf_port_tx_packets_total Packets sent out of a cube port.
# TYPE edgenf_port_tx_packets_total counter
edgenf_port_tx_packets_total{cube="c1",port="p0",type="portfwd"} 0
edgenf_port_tx_packets_total{cube="c1",port="p1",type="portfwd"} 1
edgenf_port_tx_packets_total{cube="sink",port="p0",type="portfwd"} 0
`
	var err error
	for range 100 { // the injected frame crosses the injection veth
		if err = testutil.GatherAndCompare(reg, strings.NewReader(want), "edgenf_port_tx_packets_total"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	rest := `
# HELP edgenf_cube_slow_copies_total Copies of packets (P4 clone, multicast) the kernel could not make and the daemon sent.
# TYPE edgenf_cube_slow_copies_total counter
edgenf_cube_slow_copies_total{cube="c1",type="portfwd"} 0
edgenf_cube_slow_copies_total{cube="sink",type="portfwd"} 0
# HELP edgenf_cubes Cubes configured, by NF type.
# TYPE edgenf_cubes gauge
edgenf_cubes{type="portfwd"} 2
# HELP edgenf_copy_machine_stale_total Frames with recorded copies whose ring slot was overwritten before they reached TC (dropped).
# TYPE edgenf_copy_machine_stale_total counter
edgenf_copy_machine_stale_total 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(rest), "edgenf_cube_slow_copies_total", "edgenf_cubes", "edgenf_copy_machine_stale_total"); err != nil {
		t.Fatal(err)
	}
}

// TestTenantScopeSeesOnlyItsCubes: a tenant's scrape has the series of its
// own cubes only, counts only its cubes, and none of the host-wide series.
func TestTenantScopeSeesOnlyItsCubes(t *testing.T) {
	eng := nftest.Engine(t)
	nftest.MustUpdate(t, eng, func(tp *cube.Topology) error {
		for _, c := range []struct{ name, tenant string }{{"r1", "red"}, {"r2", "red"}, {"b1", "blue"}, {"a1", ""}} {
			if err := tp.AddCube(&cube.Cube{Name: c.name, Type: "portfwd", Hook: datapath.XDP, Tenant: c.tenant}); err != nil {
				return err
			}
			if err := tp.AddPort(c.name, cube.Port{Name: "p0", Index: 0}); err != nil {
				return err
			}
		}
		return nil
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(eng, Scope{Tenant: "red"}))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "edgenf_copy_machine") {
			t.Errorf("tenant scrape has host-wide series %s", f.GetName())
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cube" && l.GetValue() != "r1" && l.GetValue() != "r2" {
					t.Errorf("tenant red sees %s of cube %s", f.GetName(), l.GetValue())
				}
			}
			if f.GetName() == "edgenf_cubes" && m.GetGauge().GetValue() != 2 {
				t.Errorf("tenant red counts %v cubes", m.GetGauge().GetValue())
			}
		}
	}
	if n := testutil.CollectAndCount(NewCollector(eng, Scope{Tenant: "red"}), "edgenf_port_rx_packets_total"); n != 2 {
		t.Errorf("red has %d rx series, want 2 (r1:p0, r2:p0)", n)
	}
	if n := testutil.CollectAndCount(NewCollector(eng, Everything), "edgenf_port_rx_packets_total"); n != 4 {
		t.Errorf("the administrator has %d rx series, want 4", n)
	}
}
