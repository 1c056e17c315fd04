// Package monitor is the monitor NF: a transparent cube that counts packets
// and bytes per direction and L3/L4 protocol, and passes everything.
package monitor

import (
	"embed"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/counters"
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

// Counts reads the non-zero counters.
func Counts(h cube.Handle) ([]Count, error) {
	m, err := h.Map("mon_counts")
	if err != nil {
		return nil, err
	}
	out := []Count{}
	for dir := 0; dir < 2; dir++ {
		for cls, name := range Classes {
			sum, err := counters.ReadTraffic(m, uint32(dir*len(Classes)+cls))
			if err != nil {
				return nil, err
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
	keys := make([]uint32, 2*len(Classes))
	for i := range keys {
		keys[i] = uint32(i)
	}
	if err := counters.Zero[counters.Traffic](m, keys...); err != nil {
		return nil, err
	}
	return counters.Reset, nil
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
