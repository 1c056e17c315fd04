package telemetry

import (
	"bufio"
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	_ "github.com/edgenf/edgenf/internal/nf/firewall"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scraper gathers by parsing what WriteText writes with Prometheus' own
// parser: the tests check the exposition's bytes, not an intermediate.
func scraper(eng *engine.Engine, who tenant.Actor) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		var b bytes.Buffer
		if err := WriteText(bufio.NewWriter(&b), Gather(eng, who)); err != nil {
			return nil, err
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		byName, err := p.TextToMetricFamilies(&b)
		if err != nil {
			return nil, err
		}
		var out []*dto.MetricFamily
		for _, n := range slices.Sorted(maps.Keys(byName)) {
			out = append(out, byName[n])
		}
		return out, nil
	})
}

// chainWithFrame builds c1 (tenant red) p1 → sink p0 (no tenant), forwards
// p0 → p1 in c1, and injects one UDP frame into c1:p0.
func chainWithFrame(t *testing.T) *engine.Engine {
	eng := nftest.Engine(t)
	nftest.MustUpdate(t, eng, func(tp *cube.Topology) error {
		for _, c := range []*cube.Cube{{Name: "c1", Tenant: "red"}, {Name: "sink"}} {
			c.Type, c.Hook = "portfwd", datapath.XDP
			if err := tp.AddCube(c); err != nil {
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
	return eng
}

// TestScrapeExportsKernelCounters: a frame through a cube shows in the
// port counters a scrape returns, labelled with cube, port, slice, tenant
// and type, with the per-type cube gauge, the cubes' up and
// slow-path copy series and the copy machine's counters.
func TestScrapeExportsKernelCounters(t *testing.T) {
	eng := chainWithFrame(t)
	g := scraper(eng, tenant.Admin)
	want := `
# HELP edgenf_port_transmit_packets_total Frames sent out of a cube port.
# TYPE edgenf_port_transmit_packets_total counter
edgenf_port_transmit_packets_total{cube="c1",port="p0",slice="",tenant="red",type="portfwd"} 0
edgenf_port_transmit_packets_total{cube="c1",port="p1",slice="",tenant="red",type="portfwd"} 1
edgenf_port_transmit_packets_total{cube="sink",port="p0",slice="",tenant="",type="portfwd"} 0
`
	var err error
	// the injected frame crosses the injection veth (its backlog, which a
	// busy machine may leave for a while)
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err = testutil.GatherAndCompare(g, strings.NewReader(want), "edgenf_port_transmit_packets_total"); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	rest := `
# HELP edgenf_port_receive_bytes_total Bytes of the frames received on a cube port.
# TYPE edgenf_port_receive_bytes_total counter
edgenf_port_receive_bytes_total{cube="c1",port="p0",slice="",tenant="red",type="portfwd"} 60
edgenf_port_receive_bytes_total{cube="c1",port="p1",slice="",tenant="red",type="portfwd"} 0
edgenf_port_receive_bytes_total{cube="sink",port="p0",slice="",tenant="",type="portfwd"} 60
# HELP edgenf_cube_up 1 if the cube runs, 0 if it could not be restored and a stand-in drops its frames.
# TYPE edgenf_cube_up gauge
edgenf_cube_up{cube="c1",slice="",tenant="red",type="portfwd"} 1
edgenf_cube_up{cube="sink",slice="",tenant="",type="portfwd"} 1
# HELP edgenf_cube_slow_copies_total Copies of packets (P4 clone, multicast) the kernel could not make and the daemon sent.
# TYPE edgenf_cube_slow_copies_total counter
edgenf_cube_slow_copies_total{cube="c1",slice="",tenant="red",type="portfwd"} 0
edgenf_cube_slow_copies_total{cube="sink",slice="",tenant="",type="portfwd"} 0
# HELP edgenf_cubes Cubes configured, by NF type and tenant.
# TYPE edgenf_cubes gauge
edgenf_cubes{tenant="",type="portfwd"} 1
edgenf_cubes{tenant="red",type="portfwd"} 1
# HELP edgenf_copy_machine_stale_total Frames with recorded copies whose ring slot was overwritten before they reached TC (dropped).
# TYPE edgenf_copy_machine_stale_total counter
edgenf_copy_machine_stale_total 0
# HELP edgenf_start_cubes Cubes found pinned when the daemon started, by what it did: adopted (their program is the current one) or reloaded (built from another object, an upgrade: replaced in place).
# TYPE edgenf_start_cubes gauge
edgenf_start_cubes{how="adopted"} 0
edgenf_start_cubes{how="reloaded"} 0
`
	if err := testutil.GatherAndCompare(g, strings.NewReader(rest), "edgenf_port_receive_bytes_total", "edgenf_cube_up",
		"edgenf_cube_slow_copies_total", "edgenf_cubes", "edgenf_copy_machine_stale_total", "edgenf_start_cubes"); err != nil {
		t.Fatal(err)
	}
	// Prometheus' own naming rules (what promtool check metrics applies)
	problems, err := testutil.GatherAndLint(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestTransparentCubeSeriesByDirection: a transparent cube's series are its
// two directions through its attachment point.
func TestTransparentCubeSeriesByDirection(t *testing.T) {
	eng := nftest.Engine(t)
	nftest.MustUpdate(t, eng, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "r", Type: "portfwd", Hook: datapath.XDP, Ports: []cube.Port{{Name: "p0"}}}); err != nil {
			return err
		}
		if err := tp.AddCube(&cube.Cube{Name: "fw", Type: "firewall", Hook: datapath.XDP}); err != nil {
			return err
		}
		return tp.Attach("fw", "r:p0", "")
	})
	var ports []string
	for _, p := range Gather(eng, tenant.Admin) {
		if p.Samples[0].Family == PortReceivePackets && p.Labels[0].Value == "fw" {
			ports = append(ports, p.Labels[1].Value)
		}
	}
	if strings.Join(ports, ",") != "egress,ingress" {
		t.Fatalf("fw's port series: %v, want egress, ingress", ports)
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
	families, err := scraper(eng, tenant.Of("red")).Gather()
	if err != nil {
		t.Fatal(err)
	}
	rx := 0
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "edgenf_copy_machine") || strings.HasPrefix(f.GetName(), "edgenf_start") {
			t.Errorf("tenant scrape has host-wide series %s", f.GetName())
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cube" && l.GetValue() != "r1" && l.GetValue() != "r2" {
					t.Errorf("tenant red sees %s of cube %s", f.GetName(), l.GetValue())
				}
				if l.GetName() == "tenant" && l.GetValue() != "red" {
					t.Errorf("tenant red sees %s of tenant %s", f.GetName(), l.GetValue())
				}
			}
			if f.GetName() == "edgenf_cubes" && m.GetGauge().GetValue() != 2 {
				t.Errorf("tenant red counts %v cubes", m.GetGauge().GetValue())
			}
		}
		if f.GetName() == "edgenf_port_receive_packets_total" {
			rx = len(f.GetMetric())
		}
	}
	if rx != 2 {
		t.Errorf("red has %d receive series, want 2 (r1:p0, r2:p0)", rx)
	}
	all, _ := scraper(eng, tenant.Admin).Gather()
	for _, f := range all {
		if f.GetName() == "edgenf_port_receive_packets_total" && len(f.GetMetric()) != 4 {
			t.Errorf("the administrator has %d receive series, want 4", len(f.GetMetric()))
		}
	}
}
