package capture

import (
	"context"

	"github.com/cilium/ebpf"
	pcap "github.com/edgenf/edgenf/internal/capture"
	"github.com/edgenf/edgenf/internal/cube"
)

// MaxSnaplen is the longest copy of a frame (capture.bpf.c's CAP_MAX):
// jumbo frames fit; longer ones (GSO packets at TC) are cut.
const MaxSnaplen = 16384

// DefaultRate bounds a capture that names no rate: frames per second on each
// CPU (the bucket is per CPU, so the bound on the whole is this times the
// CPUs). It keeps a forgotten capture on a busy port from costing the
// chain more than copying that many frames.
const DefaultRate = 100000

// Config is a capture's settings.
type Config struct {
	// Snaplen: bytes copied of each frame (0: MaxSnaplen).
	Snaplen int `json:"snaplen,omitempty" minimum:"0" maximum:"16384" doc:"bytes copied of each frame, 1..16384 (0 or absent: 16384)"`
	// Direction: in (towards the cube or host owning the point), out, or
	// both (default).
	Direction string `json:"direction,omitempty" enum:"in|out|both" doc:"in (towards the cube or host owning the point), out, or both (absent: both)"`
	// Filter: a tcpdump (libpcap) filter expression; empty takes every
	// frame.
	Filter string `json:"filter,omitempty" doc:"a tcpdump (libpcap) filter expression; absent or empty takes every frame; one libpcap does not compile: 422"`
	// Rate: at most this many frames per second per CPU are copied
	// (0: DefaultRate; -1: no bound). Frames over it pass uncopied and are
	// counted.
	Rate int64 `json:"rate,omitempty" minimum:"-1" doc:"at most this many frames per second per CPU are copied (0 or absent: 100000; -1: no bound); frames over it pass uncopied and are counted"`
}

// Validate checks the settings; the filter is compiled (by libpcap).
func (cfg *Config) Validate(*cube.Cube) error {
	if cfg.Snaplen < 0 || cfg.Snaplen > MaxSnaplen {
		return cube.Errorf("config.snaplen", "snap length %d: give 1..%d (0: %d)", cfg.Snaplen, MaxSnaplen, MaxSnaplen)
	}
	if _, err := dirMask(cfg.Direction); err != nil {
		return err
	}
	if cfg.Rate < -1 {
		return cube.Errorf("config.rate", "rate %d: give frames per second, 0 for the default (%d) or -1 for no bound", cfg.Rate, DefaultRate)
	}
	if _, err := pcap.Compile(context.Background(), cfg.Filter); err != nil {
		return cube.Unprocessable("config.filter", "%v", err)
	}
	return nil
}

func dirMask(d string) (uint32, error) {
	switch d {
	case "", "both":
		return 3, nil
	case "in":
		return 1, nil
	case "out":
		return 2, nil
	}
	return 0, cube.Errorf("config.direction", "direction %q: give in, out or both", d)
}

// SnaplenOf is the snap length a capture applies.
func (cfg *Config) SnaplenOf() int {
	if cfg.Snaplen == 0 {
		return MaxSnaplen
	}
	return cfg.Snaplen
}

// RateOf is the bound on frames per second per CPU (0: none).
func (cfg *Config) RateOf() uint64 {
	switch cfg.Rate {
	case 0:
		return DefaultRate
	case -1:
		return 0
	}
	return uint64(cfg.Rate)
}

// kernel layouts (capture.bpf.c)
type kconfig struct {
	Snaplen uint32
	Dirs    uint32
	NProg   uint32
	Pad     uint32
	Rate    uint64
	Burst   uint64
}

type kinsn struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}

type controller struct{}

// Maps is where a capture's maps come from: a cube.Handle, or a
// datapath.Program (benchmarks).
type Maps interface {
	Map(name string) (*ebpf.Map, error)
}

// Sync writes the settings and the filter program.
func (controller) Sync(h cube.Handle, c *cube.Cube) error {
	v, err := cube.Decode("config", c.Config, &Config{})
	if err != nil {
		return err
	}
	return Configure(h, v.(*Config))
}

// Configure writes cfg into a capture's maps. The program is written
// before its length: a capture being created sees no filter until then,
// so it passes frames uncaptured, never through half a program.
func Configure(h Maps, cfg *Config) error {
	prog, err := pcap.Compile(context.Background(), cfg.Filter)
	if err != nil {
		return cube.Unprocessable("config.filter", "%v", err)
	}
	pm, err := h.Map("cap_prog")
	if err != nil {
		return err
	}
	for i, in := range prog {
		if err := pm.Put(uint32(i), kinsn{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}); err != nil {
			return err
		}
	}
	dirs, _ := dirMask(cfg.Direction)
	rate := cfg.RateOf()
	kc := kconfig{Snaplen: uint32(cfg.SnaplenOf()), Dirs: dirs, NProg: uint32(len(prog)), Rate: rate, Burst: max(rate/10, 1)}
	m, err := h.Map("cap_config")
	if err != nil {
		return err
	}
	return m.Put(uint32(0), kc)
}
