package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	pcap "github.com/edgenf/edgenf/internal/capture"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The capture's cost model: a frame in a direction the capture does not
// take passes at once; one it takes is copied (up to the snap length; the
// whole frame when a filter must see it first), run through the filter's
// classic BPF instructions one by one (bpf_loop), timestamped, checked
// against the rate and written into the ring.
//
// What the write costs depends on the ring, not on the frame: with room,
// a reservation, a copy and a commit, the reader woken only once 256 KiB
// wait (CAP_WAKE_BYTES); full (its reader behind, as under a flood), a
// reservation that fails and a frame counted as lost. The model prices a
// ring with room: a capture whose reader keeps up (`edgenf capture` drains
// it every 20 to 200 ms). Its cases hold the ring so for every measured
// run (emptied before each, each run shorter than the wake-up threshold),
// or full (filled once, nobody reading), never at the pace of a reader
// running beside the measurement.
const (
	termSkip   = "capture.skip"
	termRecord = "capture.record"
	termLost   = "capture.lost"
	termByte   = "capture.byte"
	termRingB  = "capture.ring_byte"
	termFilter = "capture.filter"
	termInsn   = "capture.filter.insn"
)

// Sizes of the ring (capture.bpf.c): its bytes, the fill at which a
// write wakes the reader, and what a record adds to the bytes copied (the
// ring's own header and struct cap_rec, rounded to 8 bytes).
const (
	ringBytes = 8 << 20
	wakeBytes = 256 << 10
)

func recordBytes(copied int) int { return (8 + recHdr + copied + 7) &^ 7 }

func init() {
	estimate.Register(&estimate.Model{Type: "capture",
		Terms: []estimate.Term{
			{Name: termSkip, Doc: "a frame in a direction the capture does not take, passed"},
			{Name: termRecord, Doc: "a frame captured into a ring with room: clock, rate bound, reservation and commit"},
			{Name: termLost, Doc: "a frame taken while the ring is full (its reader behind): clock, rate bound, a failed reservation, counted as lost"},
			{Name: termByte, Doc: "one byte copied out of the frame"},
			{Name: termRingB, Doc: "one byte written into a ring with room (a full ring takes none)"},
			{Name: termFilter, Doc: "a filter run: its interpreter set up and started (bpf_loop), whatever the frame"},
			{Name: termInsn, Doc: "one classic BPF instruction of the filter run (those the frame takes it through)"},
		},
		Uses:  costUses,
		Cases: costCases,
	})
}

func costUses(_ *estimate.Profile, c *cube.Cube, in string) ([]estimate.Use, []string, error) {
	v, err := cube.Decode("config", c.Config, &Config{})
	if err != nil {
		return nil, nil, err
	}
	return framesUses(v.(*Config), in, typical, false)
}

// typical is the frame the model prices: the benchmark's 64-byte
// IPv4/UDP frame.
var typical = estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1000, Dport: 2000})

// framesUses is what frame, seen in direction in, uses, written into a
// ring with room (full: a ring with none).
func framesUses(cfg *Config, in string, frame []byte, full bool) ([]estimate.Use, []string, error) {
	dirs, err := dirMask(cfg.Direction)
	if err != nil {
		return nil, nil, err
	}
	if d, ok := map[string]datapath.Direction{"ingress": datapath.Ingress, "egress": datapath.Egress}[in]; ok && dirs&(1<<d) == 0 {
		return []estimate.Use{{Term: termSkip, N: 1, What: "capture: other direction, passed"}}, nil, nil
	}
	prog, err := pcap.Compile(context.Background(), cfg.Filter)
	if err != nil {
		return nil, nil, cube.Unprocessable("config.filter", "%v", err)
	}
	n := len(frame)
	copied := min(n, cfg.SnaplenOf())
	record := []estimate.Use{{Term: termRecord, N: 1, What: "capture: record"}, {Term: termRingB, N: float64(copied), What: "capture: record"}}
	ring := "a ring with room (its reader keeping up)"
	if full {
		record = []estimate.Use{{Term: termLost, N: 1, What: "capture: ring full, lost"}}
		ring = "a full ring (the frame lost)"
	}
	if len(prog) == 0 {
		return append(record, estimate.Use{Term: termByte, N: float64(copied), What: "capture: copy"}),
			[]string{fmt.Sprintf("a %d-byte frame, captured (within the rate bound) into %s; a longer one copies up to the snap length", n, ring)}, nil
	}
	// the filter sees the whole frame; it runs instruction by instruction
	steps, match := pcap.Steps(prog, frame)
	uses := []estimate.Use{
		{Term: termByte, N: float64(n), What: "capture: copy"},
		{Term: termFilter, N: 1, What: "capture: filter"},
		{Term: termInsn, N: float64(steps), What: "capture: filter"},
	}
	note := fmt.Sprintf("a %d-byte IPv4/UDP frame: the filter runs %d of its %d instructions and ", n, steps, len(prog))
	if match {
		uses = append(uses, record...)
		note += "takes it into " + ring
	} else {
		note += "passes it by"
	}
	return uses, []string{note}, nil
}

// drained holds a case's ring empty for every measured run: it is read
// out before each, and each run writes fewer bytes than wake the reader.
func drained(copied int) (func(cube.Handle, func(int) error) (func() error, func(), error), int) {
	steady := func(h cube.Handle, _ func(int) error) (func() error, func(), error) {
		rd, err := Open(h)
		if err != nil {
			return nil, nil, err
		}
		before := func() error {
			for {
				_, _, err := rd.Next(time.Now())
				if errors.Is(err, ErrTimeout) {
					return nil
				}
				if err != nil {
					return err
				}
			}
		}
		return before, func() { rd.Close() }, nil
	}
	return steady, wakeBytes * 9 / 10 / recordBytes(copied)
}

// filled fills a case's ring once, with nobody reading it: every measured
// frame finds it full.
func filled(copied int) func(cube.Handle, func(int) error) (func() error, func(), error) {
	return func(h cube.Handle, run func(int) error) (func() error, func(), error) {
		if err := run(2 * ringBytes / recordBytes(copied)); err != nil {
			return nil, nil, err
		}
		st, err := h.Map("cap_stats")
		if err != nil {
			return nil, nil, err
		}
		s, err := readStats(st)
		if err != nil {
			return nil, nil, err
		}
		if s.RingDrop == 0 {
			return nil, nil, fmt.Errorf("the ring is not full after %d frames", 2*ringBytes/recordBytes(copied))
		}
		return nil, func() {}, nil
	}
}

// writes says whether uses write into the ring (or try to).
func writes(uses []estimate.Use) bool {
	for _, u := range uses {
		if u.Term == termRecord || u.Term == termLost {
			return true
		}
	}
	return false
}

// costCases are the calibration cases, or with holdout others. Captures
// in them have no rate bound: a calibration runs far more frames per
// second than any bound lets through.
func costCases(holdout bool) []estimate.Case {
	mk := func(name string, cfg Config, dir datapath.Direction, spec estimate.FrameSpec, full bool) estimate.Case {
		cfg.Rate = -1
		b, err := json.Marshal(cfg)
		if err != nil {
			panic(err)
		}
		if spec.Src == "" {
			spec.Src, spec.Dst, spec.Sport, spec.Dport = "198.18.0.10", "198.18.1.1", 1000, 2000
		}
		frame := estimate.Frame(spec)
		// a filter that cannot compile here (no tcpdump) leaves Uses to
		// the model, whose error the calibration reports
		uses, _, _ := framesUses(&cfg, dir.String(), frame, full)
		c := estimate.Case{Name: name, Cube: &cube.Cube{Name: "cap", Type: "capture", Config: b}, Dir: dir, Frame: frame, Uses: uses}
		copied := min(len(frame), cfg.SnaplenOf())
		switch {
		case !writes(uses):
		case full:
			c.Steady = filled(copied)
		default:
			c.Steady, c.Repeat = drained(copied)
		}
		return c
	}
	if holdout {
		return []estimate.Case{
			mk("egress, 128-byte TCP, filter host and tcp", Config{Filter: "host 198.18.0.10 and tcp"}, datapath.Egress,
				estimate.FrameSpec{Proto: "tcp", TCPFlags: "A", Size: 128}, false),
			mk("ingress, 200-byte frame, snap length 64", Config{Snaplen: 64}, datapath.Ingress, estimate.FrameSpec{Size: 200}, false),
			mk("egress, capture of ingress only", Config{Direction: "in"}, datapath.Egress, estimate.FrameSpec{}, false),
			mk("ingress, 200-byte frame, snap length 64, ring full", Config{Snaplen: 64}, datapath.Ingress, estimate.FrameSpec{Size: 200}, true),
		}
	}
	return []estimate.Case{
		mk("ingress, 64-byte frame", Config{}, datapath.Ingress, estimate.FrameSpec{}, false),
		mk("ingress, 256-byte frame", Config{}, datapath.Ingress, estimate.FrameSpec{Size: 256}, false),
		mk("ingress, 64-byte frame, ring full", Config{}, datapath.Ingress, estimate.FrameSpec{}, true),
		mk("ingress, 256-byte frame, ring full", Config{}, datapath.Ingress, estimate.FrameSpec{Size: 256}, true),
		mk("ingress, 250-byte frame, snap length 96", Config{Snaplen: 96}, datapath.Ingress, estimate.FrameSpec{Size: 250}, false),
		mk("ingress, filter udp port 2000", Config{Filter: "udp port 2000"}, datapath.Ingress, estimate.FrameSpec{}, false),
		mk("ingress, filter net 198.18.0.0/16 and not tcp", Config{Filter: "net 198.18.0.0/16 and not tcp"}, datapath.Ingress, estimate.FrameSpec{}, false),
		mk("ingress, capture of egress only", Config{Direction: "out"}, datapath.Ingress, estimate.FrameSpec{}, false),
		mk("ingress, filter tcp port 80 (not taken)", Config{Filter: "tcp port 80"}, datapath.Ingress, estimate.FrameSpec{}, false),
		mk("ingress, 200-byte frame, filter udp and src net 198.18.0.0/24 and dst port 2000", Config{Filter: "udp and src net 198.18.0.0/24 and dst port 2000"},
			datapath.Ingress, estimate.FrameSpec{Size: 200}, false),
	}
}
