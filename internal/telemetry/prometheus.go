// Package telemetry exports the datapath's counters to monitoring systems.
package telemetry

import (
	"sort"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector reads every cube's counters at scrape time (the kernel keeps
// them; nothing is sampled in between).
type Collector struct {
	eng   *engine.Engine
	scope Scope
	descs map[string]*prometheus.Desc
}

// Scope is what one scrape may see: everything (the administrator), or the
// series of one tenant's cubes only. Series that are not about a cube (the
// copy machine's) are the administrator's.
type Scope struct {
	All    bool
	Tenant string
}

// Everything is the administrator's scope.
var Everything = Scope{All: true}

func (s Scope) sees(c *cube.Cube) bool { return s.All || c.Tenant == s.Tenant }

var portMetrics = []struct {
	name, help string
	get        func(engine.PortStats) uint64
}{
	{"rx_packets_total", "Packets received on a cube port.", func(s engine.PortStats) uint64 { return s.RxPackets }},
	{"rx_bytes_total", "Bytes received on a cube port.", func(s engine.PortStats) uint64 { return s.RxBytes }},
	{"tx_packets_total", "Packets sent out of a cube port.", func(s engine.PortStats) uint64 { return s.TxPackets }},
	{"tx_bytes_total", "Bytes sent out of a cube port.", func(s engine.PortStats) uint64 { return s.TxBytes }},
	{"drop_packets_total", "Packets dropped by a cube, by the port they came in on.", func(s engine.PortStats) uint64 { return s.DropPackets }},
	{"punt_packets_total", "Packets punted to the slow path, by the port they came in on.", func(s engine.PortStats) uint64 { return s.PuntPackets }},
}

// NewCollector builds a collector over eng that exports what scope sees.
func NewCollector(eng *engine.Engine, scope Scope) *Collector {
	c := &Collector{eng: eng, scope: scope, descs: map[string]*prometheus.Desc{}}
	for _, m := range portMetrics {
		c.descs[m.name] = prometheus.NewDesc("edgenf_port_"+m.name, m.help, []string{"cube", "type", "port"}, nil)
	}
	c.descs["cubes"] = prometheus.NewDesc("edgenf_cubes", "Cubes configured, by NF type.", []string{"type"}, nil)
	c.descs["slow_copies"] = prometheus.NewDesc("edgenf_cube_slow_copies_total",
		"Copies of packets (P4 clone, multicast) the kernel could not make and the daemon sent.", []string{"cube", "type"}, nil)
	c.descs["copy_stale"] = prometheus.NewDesc("edgenf_copy_machine_stale_total",
		"Frames with recorded copies whose ring slot was overwritten before they reached TC (dropped).", nil, nil)
	c.descs["copy_failed"] = prometheus.NewDesc("edgenf_copy_machine_failed_total",
		"Recorded copies the copy machine could not make.", nil, nil)
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	t := c.eng.Topology()
	perType := map[string]float64{}
	for _, name := range t.CubeNames() {
		cb := t.Cubes[name]
		if !c.scope.sees(cb) {
			continue
		}
		perType[cb.Type]++
		st, err := c.eng.Stats(tenant.Admin, name)
		if err != nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.descs["slow_copies"], prometheus.CounterValue, float64(st.SlowCopies), name, cb.Type)
		c.collectNF(ch, name, cb.Type)
		rows := st.Ports
		for dir, s := range st.Directions {
			rows = append(rows, engine.PortStats{Port: dir, Stats: s})
		}
		for _, p := range rows {
			for _, m := range portMetrics {
				ch <- prometheus.MustNewConstMetric(c.descs[m.name], prometheus.CounterValue, float64(m.get(p)), name, cb.Type, p.Port)
			}
		}
	}
	for typ, n := range perType {
		ch <- prometheus.MustNewConstMetric(c.descs["cubes"], prometheus.GaugeValue, n, typ)
	}
	if !c.scope.All {
		return
	}
	if cs, err := c.eng.CopyStats(); err == nil {
		ch <- prometheus.MustNewConstMetric(c.descs["copy_stale"], prometheus.CounterValue, float64(cs.Stale))
		ch <- prometheus.MustNewConstMetric(c.descs["copy_failed"], prometheus.CounterValue, float64(cs.Failed))
	}
}

// collectNF exports a cube's own metrics (cube.MetricsReporter) as
// edgenf_<type>_<name>{cube, ...}. Their descriptors are made per scrape:
// the set of labels depends on what the NF reports.
func (c *Collector) collectNF(ch chan<- prometheus.Metric, name, typ string) {
	ms, err := c.eng.Metrics(name)
	if err != nil {
		return
	}
	for _, m := range ms {
		keys := make([]string, 0, len(m.Labels)+1)
		for k := range m.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		vals := []string{name}
		for _, k := range keys {
			vals = append(vals, m.Labels[k])
		}
		d := prometheus.NewDesc("edgenf_"+typ+"_"+m.Name, m.Help, append([]string{"cube"}, keys...), nil)
		vt := prometheus.CounterValue
		if m.Gauge {
			vt = prometheus.GaugeValue
		}
		ch <- prometheus.MustNewConstMetric(d, vt, m.Value, vals...)
	}
}
