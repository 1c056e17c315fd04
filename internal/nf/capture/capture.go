// Package capture is the capture NF: a transparent cube that copies the
// frames crossing its point (up to a snap length, matching a tcpdump filter,
// within a rate) into a ring buffer, and passes every frame unchanged. The
// daemon attaches one for each `edgenf capture` and removes it when the
// capture ends (internal/api/capture.go); internal/capture writes the
// records as pcapng.
package capture

import (
	"context"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	pcap "github.com/edgenf/edgenf/internal/capture"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

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

type kstats struct {
	Seen, Matched, Captured, RateDrop, RingDrop, Tokens, Last uint64
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

// Reader reads a capture's ring buffer.
type Reader struct {
	rd    *ringbuf.Reader
	stats *ebpf.Map
	rec   ringbuf.Record
}

// Open starts reading the capture cube's ring (one reader at a time).
func Open(h Maps) (*Reader, error) {
	ring, err := h.Map("cap_ring")
	if err != nil {
		return nil, err
	}
	st, err := h.Map("cap_stats")
	if err != nil {
		return nil, err
	}
	ring, err = ring.Clone()
	if err != nil {
		return nil, err
	}
	defer ring.Close()
	if st, err = st.Clone(); err != nil {
		return nil, err
	}
	rd, err := ringbuf.NewReader(ring)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &Reader{rd: rd, stats: st}, nil
}

// ErrTimeout is Next's answer when no frame came before the deadline.
var ErrTimeout = errors.New("no frame")

// recHdr is struct cap_rec's size.
const recHdr = 24

// Next returns the next captured frame (its Time in CLOCK_MONOTONIC
// nanoseconds since boot, to be placed by the caller), waiting until
// deadline. Data is valid until the next call.
func (r *Reader) Next(deadline time.Time) (mono uint64, p pcap.Packet, err error) {
	r.rd.SetDeadline(deadline)
	if err := r.rd.ReadInto(&r.rec); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ringbuf.ErrFlushed) {
			return 0, p, ErrTimeout
		}
		return 0, p, err
	}
	s := r.rec.RawSample
	if len(s) < recHdr {
		return 0, p, fmt.Errorf("capture record of %d bytes", len(s))
	}
	mono = binary.NativeEndian.Uint64(s[0:])
	p.Len = int(binary.NativeEndian.Uint32(s[8:]))
	caplen := int(binary.NativeEndian.Uint32(s[12:]))
	p.Dir = int(binary.NativeEndian.Uint32(s[16:]))
	if caplen > len(s)-recHdr {
		return 0, p, fmt.Errorf("capture record: %d bytes announced, %d present", caplen, len(s)-recHdr)
	}
	p.Data = s[recHdr : recHdr+caplen]
	return mono, p, nil
}

// Stats sums the capture's counters over the CPUs.
func (r *Reader) Stats() (pcap.Stats, error) {
	return readStats(r.stats)
}

func readStats(m *ebpf.Map) (pcap.Stats, error) {
	var percpu []kstats
	var s pcap.Stats
	if err := m.Lookup(uint32(0), &percpu); err != nil {
		return s, err
	}
	for _, c := range percpu {
		s.Seen += c.Seen
		s.Matched += c.Matched
		s.Captured += c.Captured
		s.RateDrop += c.RateDrop
		s.RingDrop += c.RingDrop
	}
	return s, nil
}

// Close stops reading.
func (r *Reader) Close() error {
	r.stats.Close()
	return r.rd.Close()
}

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
