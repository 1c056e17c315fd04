// Package telemetry exports the datapath's counters to monitoring systems:
// Prometheus (pulled from /metrics) and InfluxDB (pushed as line protocol).
// Both read the same series, gathered by Gather.
package telemetry

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Family is one metric. Its Prometheus name is edgenf_<Subsystem>_<Name>
// (edgenf_<Name> without a subsystem); in InfluxDB it is the field Name of
// the measurement edgenf_<Subsystem> (edgenf).
type Family struct {
	Subsystem string
	Name      string
	Help      string
	Gauge     bool // else a counter (Name ends in _total)
	// Float: the samples' values are Sample.Float (an NF type's own
	// metrics, which InfluxDB gets as floats); else the exact counts
	// Sample.Value (the kernel's counters, InfluxDB integers).
	Float bool
	// Histogram: the samples are Sample.Hist (Prometheus histograms;
	// InfluxDB fields <Name>_count, _sum and _le_<bound>).
	Histogram bool
}

// FullName is the family's Prometheus name.
func (f *Family) FullName() string {
	if f.Subsystem == "" {
		return "edgenf_" + f.Name
	}
	return "edgenf_" + f.Subsystem + "_" + f.Name
}

// Measurement is the family's InfluxDB measurement.
func (f *Family) Measurement() string {
	if f.Subsystem == "" {
		return "edgenf"
	}
	return "edgenf_" + f.Subsystem
}

// Label is a Prometheus label, an InfluxDB tag.
type Label struct{ Name, Value string }

// Sample is one family's value in a point. Counts are exact integers (the
// kernel's 64-bit counters; InfluxDB stores them as integers).
type Sample struct {
	Family *Family
	Value  uint64
	Float  float64         // for a Family.Float
	Hist   *cube.Histogram // for a Family.Histogram
}

// Point is the samples of families of one subsystem that share their
// labels (the counters of one port, of one cube): one line of InfluxDB line
// protocol, one series of each family in Prometheus.
type Point struct {
	// Labels are sorted by name. Every series of a family has the same
	// labels; one without a value (the tenant of the administrator's
	// cubes) is empty in Prometheus (which treats it as missing) and left
	// out in InfluxDB (which refuses empty tags).
	Labels  []Label
	Samples []Sample
}

// Labels of the cube-level series; port series add "port". "slice" is the
// slice whose chain the cube is part of, set once slices exist (a cube of
// no slice has no slice label).
const (
	LabelCube   = "cube"
	LabelPort   = "port"
	LabelSlice  = "slice"
	LabelTenant = "tenant"
	LabelType   = "type"
)

// The families gathered from every cube's counters.
var (
	PortReceivePackets  = &Family{"port", "receive_packets_total", "Frames received on a cube port (a transparent cube: through its attachment point, by direction).", false, false, false}
	PortReceiveBytes    = &Family{"port", "receive_bytes_total", "Bytes of the frames received on a cube port.", false, false, false}
	PortTransmitPackets = &Family{"port", "transmit_packets_total", "Frames sent out of a cube port.", false, false, false}
	PortTransmitBytes   = &Family{"port", "transmit_bytes_total", "Bytes of the frames sent out of a cube port.", false, false, false}
	PortDropPackets     = &Family{"port", "drop_packets_total", "Frames a cube dropped, by the port they came in on.", false, false, false}
	PortDropBytes       = &Family{"port", "drop_bytes_total", "Bytes of the frames a cube dropped, by the port they came in on.", false, false, false}
	PortPuntPackets     = &Family{"port", "punt_packets_total", "Frames a cube sent to the slow path (the daemon), by the port they came in on.", false, false, false}
	PortPuntRateDrops   = &Family{"port", "punt_rate_drops_total", "Punts a cube's punt budget held back (punts_per_second, punt_burst; edgenfd -punt-rate for the administrator's cubes): never sent to the slow path, by the port they came in on.", false, false, false}
	CubeUp              = &Family{"cube", "up", "1 if the cube runs, 0 if it could not be restored and a stand-in drops its frames.", true, false, false}
	CubeSlowCopies      = &Family{"cube", "slow_copies_total", "Copies of packets (P4 clone, multicast) the kernel could not make and the daemon sent.", false, false, false}
	Cubes               = &Family{"", "cubes", "Cubes configured, by NF type and tenant.", true, false, false}
	StartCubes          = &Family{"start", "cubes", "Cubes found pinned when the daemon started, by what it did: adopted (their program is the current one) or reloaded (built from another object, an upgrade: replaced in place).", true, false, false}
	StartMapsReset      = &Family{"start", "maps_reset", "Maps of the cubes reloaded at start whose layout had changed: their contents were lost.", true, false, false}
	StartSharedReset    = &Family{"start", "shared_maps_reset", "Framework maps (patch panels, metadata scratch, configuration, copy machine) and interface programs' maps made anew since start because an earlier release's had another layout.", true, false, false}
	StartIfacesAdopted  = &Family{"start", "interfaces_adopted", "Interface programs (stubs, direct entries) found attached when the daemon started and kept as they were: nothing loaded, no link changed.", true, false, false}
	CopyStale           = &Family{"copy_machine", "stale_total", "Frames with recorded copies whose ring slot was overwritten before they reached TC (dropped).", false, false, false}
	CopyFailed          = &Family{"copy_machine", "failed_total", "Recorded copies the copy machine could not make.", false, false, false}
)

// Gather reads the series who may see: the administrator everything, a
// tenant the series of its own cubes (series that are not about a cube,
// the copy machine's, are the administrator's). The engine's lock is taken
// for a chunk of cubes at a time (engine.Counters): a gathering never holds
// the API up for long, however many cubes there are.
func Gather(eng *engine.Engine, who tenant.Actor) []Point {
	counters := eng.Counters(who.Owns)
	points := make([]Point, 0, 3*len(counters)+8)
	type typeTenant struct{ typ, tenant string }
	perType := map[typeTenant]uint64{}
	nfFamilies := map[string]*Family{}
	for _, cc := range counters {
		perType[typeTenant{cc.Type, cc.Tenant}]++
		cubeLabels := []Label{{LabelCube, cc.Cube}, {LabelSlice, cc.Slice}, {LabelTenant, cc.Tenant}, {LabelType, cc.Type}}
		up := uint64(0)
		if cc.Up {
			up = 1
		}
		points = append(points, Point{Labels: cubeLabels, Samples: []Sample{{Family: CubeUp, Value: up}, {Family: CubeSlowCopies, Value: cc.SlowCopies}}})
		// by port name: every family's series come in the order of their
		// label values, as a Prometheus registry orders them
		slices.SortFunc(cc.Ports, func(a, b engine.PortStats) int { return strings.Compare(a.Port, b.Port) })
		for _, p := range cc.Ports {
			points = append(points, Point{
				Labels:  []Label{{LabelCube, cc.Cube}, {LabelPort, p.Port}, {LabelSlice, cc.Slice}, {LabelTenant, cc.Tenant}, {LabelType, cc.Type}},
				Samples: portSamples(p.Stats),
			})
		}
		points = append(points, nfPoints(cc, nfFamilies)...)
	}
	for _, k := range slices.SortedFunc(maps.Keys(perType), func(a, b typeTenant) int {
		return cmp.Or(strings.Compare(a.tenant, b.tenant), strings.Compare(a.typ, b.typ))
	}) {
		points = append(points, Point{Labels: []Label{{LabelTenant, k.tenant}, {LabelType, k.typ}}, Samples: []Sample{{Family: Cubes, Value: perType[k]}}})
	}
	if who.IsAdmin() {
		if cs, err := eng.CopyStats(); err == nil {
			points = append(points, Point{Samples: []Sample{{Family: CopyStale, Value: cs.Stale}, {Family: CopyFailed, Value: cs.Failed}}})
		}
		st := eng.Started()
		points = append(points,
			Point{Labels: []Label{{"how", "adopted"}}, Samples: []Sample{{Family: StartCubes, Value: uint64(st.Adopted)}}},
			Point{Labels: []Label{{"how", "reloaded"}}, Samples: []Sample{{Family: StartCubes, Value: uint64(st.Reloaded)}}},
			Point{Samples: []Sample{{Family: StartMapsReset, Value: uint64(st.MapsReset)}}},
			Point{Samples: []Sample{{Family: StartSharedReset, Value: uint64(st.SharedMapsReset)}}},
			Point{Samples: []Sample{{Family: StartIfacesAdopted, Value: uint64(st.InterfacesAdopted)}}})
	}
	return points
}

func portSamples(s datapath.Stats) []Sample {
	return []Sample{
		{Family: PortReceivePackets, Value: s.RxPackets}, {Family: PortReceiveBytes, Value: s.RxBytes},
		{Family: PortTransmitPackets, Value: s.TxPackets}, {Family: PortTransmitBytes, Value: s.TxBytes},
		{Family: PortDropPackets, Value: s.DropPackets}, {Family: PortDropBytes, Value: s.DropBytes},
		{Family: PortPuntPackets, Value: s.PuntPackets}, {Family: PortPuntRateDrops, Value: s.PuntRateDrops},
	}
}

// nfPoints are a cube's NF type's own metrics (cube.MetricsReporter) as
// the families edgenf_<type>_<name>, interned in fams for the gathering.
// They carry the cube's labels but type (their name says it) and the NF's
// own; one the NF names like a cube label becomes exported_<name>, as
// Prometheus renames a target's clashing labels. Samples with the same
// labels share a point.
func nfPoints(cc engine.CubeCounters, fams map[string]*Family) []Point {
	var out []Point
	at := map[string]int{}
	for _, m := range cc.NF {
		f := fams[cc.Type+"_"+m.Name]
		if f == nil {
			f = &Family{Subsystem: cc.Type, Name: m.Name, Help: m.Help, Gauge: m.Gauge, Float: true, Histogram: m.Histogram != nil}
			fams[cc.Type+"_"+m.Name] = f
		}
		ls := []Label{{LabelCube, cc.Cube}, {LabelSlice, cc.Slice}, {LabelTenant, cc.Tenant}}
		for k, v := range m.Labels {
			if k == LabelCube || k == LabelSlice || k == LabelTenant {
				k = "exported_" + k
			}
			ls = append(ls, Label{k, v})
		}
		slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
		key := string(appendLabels(nil, ls))
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, Point{Labels: ls})
		}
		if f.Histogram != (m.Histogram != nil) {
			continue // an NF mixing kinds under one name: keep the first
		}
		out[i].Samples = append(out[i].Samples, Sample{Family: f, Float: m.Value, Hist: m.Histogram})
	}
	return out
}
