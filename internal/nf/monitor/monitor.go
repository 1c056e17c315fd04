// Package monitor is the monitor NF: a transparent cube that counts packets
// and bytes per direction and L3/L4 protocol, and passes everything.
package monitor

import (
	"embed"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// Classes in the order of enum mon_class in monitor.bpf.c.
var Classes = []string{"other", "arp", "ipv4", "ipv4-tcp", "ipv4-udp", "icmp", "ipv6", "ipv6-tcp", "ipv6-udp", "icmpv6"}

// Count is one row of the monitor's counters.
type Count struct {
	Direction string `json:"direction"`
	Protocol  string `json:"protocol"`
	Packets   uint64 `json:"packets"`
	Bytes     uint64 `json:"bytes"`
}

type count struct {
	Packets uint64
	Bytes   uint64
}

type controller struct{}

// Sync has nothing to write: the monitor has no settings.
func (controller) Sync(cube.Handle, *cube.Cube) error { return nil }

// Counts reads the non-zero counters.
func Counts(h cube.Handle) ([]Count, error) {
	m, err := h.Map("mon_counts")
	if err != nil {
		return nil, err
	}
	out := []Count{}
	var percpu []count
	for dir := 0; dir < 2; dir++ {
		for cls, name := range Classes {
			if err := m.Lookup(uint32(dir*len(Classes)+cls), &percpu); err != nil {
				return nil, err
			}
			var sum count
			for _, c := range percpu {
				sum.Packets += c.Packets
				sum.Bytes += c.Bytes
			}
			if sum.Packets > 0 {
				out = append(out, Count{Direction: datapath.Direction(dir).String(), Protocol: name, Packets: sum.Packets, Bytes: sum.Bytes})
			}
		}
	}
	return out, nil
}

func reset(h cube.Handle, _ *cube.Cube, _ any) (any, error) {
	m, err := h.Map("mon_counts")
	if err != nil {
		return nil, err
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	zero := make([]count, cpus)
	for i := 0; i < 2*len(Classes); i++ {
		if err := m.Put(uint32(i), zero); err != nil {
			return nil, err
		}
	}
	return map[string]string{"result": "counters reset"}, nil
}

// Type is the monitor NF type.
var Type = &cube.Type{
	Name:        "monitor",
	Description: "Transparent: counts packets and bytes per direction and L3/L4 protocol; passes everything.",
	Transparent: true,
	Hooks:       []datapath.Hook{datapath.XDP, datapath.TC},
	Object:      cube.HookObjects(objects, "bpf/monitor"),
	Views: []cube.View{{
		Name: "counters",
		Doc:  "Packets and bytes per direction and protocol (non-zero rows).",
		Item: &Count{},
		List: func(h cube.Handle, _ *cube.Cube) (any, error) { return Counts(h) },
	}},
	Actions: []cube.Action{{Name: "reset", Doc: "Zero the protocol counters.", Do: reset}},
	New:     func() cube.Controller { return controller{} },
}

func init() { cube.Register(Type) }
