// Package capture is the capture NF: a transparent cube that copies the
// frames crossing its point (up to a snap length, matching a tcpdump filter,
// within a rate) into a ring buffer, and passes every frame unchanged. The
// daemon attaches one for each `edgenf capture` and removes it when the
// capture ends (internal/api/capture.go); internal/capture writes the
// records as pcapng.
//
// One job per file: config.go the settings and how they reach the kernel,
// ring.go the reader of the ring buffer, cost.go the cost model, this file
// the NF type.
package capture

import (
	"embed"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// Counters is the capture's view: its counters.
type Counters struct {
	Seen     uint64 `json:"seen"`
	Matched  uint64 `json:"matched"`
	Captured uint64 `json:"captured"`
	RateDrop uint64 `json:"rate_dropped"`
	RingDrop uint64 `json:"ring_dropped"`
}

// Type is the capture NF type.
var Type = &cube.Type{
	Name: "capture",
	Description: "Transparent: copies the frames crossing its point (snap length, tcpdump filter, rate bound) into a ring buffer " +
		"that `edgenf capture` streams as pcapng; passes everything unchanged.",
	Transparent: true,
	Hooks:       []datapath.Hook{datapath.TC, datapath.XDP},
	Object:      cube.HookObjects(objects, "bpf/capture"),
	Config:      &Config{},
	Views: []cube.View{{
		Name: "counters", Doc: "Frames seen, matched by the filter, captured, and dropped over the rate or for want of ring space.",
		Item: &Counters{}, Object: true,
		List: func(h cube.Handle, _ *cube.Cube) (any, error) {
			m, err := h.Map("cap_stats")
			if err != nil {
				return nil, err
			}
			s, err := readStats(m)
			return Counters{s.Seen, s.Matched, s.Captured, s.RateDrop, s.RingDrop}, err
		},
	}},
	New: func() cube.Controller { return controller{} },
}

func init() { cube.Register(Type) }
