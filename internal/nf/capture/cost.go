package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
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
const (
	termSkip   = "capture.skip"
	termRecord = "capture.record"
	termByte   = "capture.byte"
	termInsn   = "capture.filter.insn"
)

func init() {
	estimate.Register(&estimate.Model{Type: "capture",
		Terms: []estimate.Term{
			{Name: termSkip, Doc: "a frame in a direction the capture does not take, passed"},
			{Name: termRecord, Doc: "a frame captured: clock, rate bound, ring record"},
			{Name: termByte, Doc: "one byte copied out of the frame and into the ring"},
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
	return framesUses(v.(*Config), in, typical)
}

// typical is the frame the model prices: the benchmark's 64-byte
// IPv4/UDP frame.
var typical = estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1000, Dport: 2000})

// framesUses is what frame, seen in direction in, uses.
func framesUses(cfg *Config, in string, frame []byte) ([]estimate.Use, []string, error) {
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
	if len(prog) == 0 {
		return []estimate.Use{
			{Term: termRecord, N: 1, What: "capture: record"},
			{Term: termByte, N: float64(copied), What: "capture: copy"},
		}, []string{fmt.Sprintf("a %d-byte frame, captured (within the rate bound); a longer one copies up to the snap length", n)}, nil
	}
	// the filter sees the whole frame; it runs instruction by instruction
	steps, match := pcap.Steps(prog, frame)
	uses := []estimate.Use{
		{Term: termByte, N: float64(n), What: "capture: copy"},
		{Term: termInsn, N: float64(steps), What: "capture: filter"},
	}
	note := fmt.Sprintf("a %d-byte IPv4/UDP frame: the filter runs %d of its %d instructions and ", n, steps, len(prog))
	if match {
		uses = append(uses, estimate.Use{Term: termRecord, N: 1, What: "capture: record"})
		note += "takes it"
	} else {
		note += "passes it by"
	}
	return uses, []string{note}, nil
}

// drain reads a case's ring as `edgenf capture` does, so that frames take
// the way of a ring with room.
func drain(h cube.Handle) (func(), error) {
	rd, err := Open(h)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, _, err := rd.Next(time.Now().Add(50 * time.Millisecond)); err != nil && !errors.Is(err, ErrTimeout) {
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		rd.Close()
	}, nil
}

// costCases are the calibration cases, or with holdout others. Captures
// in them have no rate bound: a calibration runs far more frames per
// second than any bound lets through.
func costCases(holdout bool) []estimate.Case {
	mk := func(name string, cfg Config, dir datapath.Direction, spec estimate.FrameSpec) estimate.Case {
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
		uses, _, _ := framesUses(&cfg, dir.String(), frame)
		return estimate.Case{Name: name, Cube: &cube.Cube{Name: "cap", Type: "capture", Config: b}, Dir: dir,
			Frame: frame, Uses: uses, Background: drain}
	}
	if holdout {
		return []estimate.Case{
			mk("egress, 128-byte TCP, filter host and tcp", Config{Filter: "host 198.18.0.10 and tcp"}, datapath.Egress,
				estimate.FrameSpec{Proto: "tcp", TCPFlags: "A", Size: 128}),
			mk("ingress, 200-byte frame, snap length 64", Config{Snaplen: 64}, datapath.Ingress, estimate.FrameSpec{Size: 200}),
			mk("egress, capture of ingress only", Config{Direction: "in"}, datapath.Egress, estimate.FrameSpec{}),
		}
	}
	return []estimate.Case{
		mk("ingress, 64-byte frame", Config{}, datapath.Ingress, estimate.FrameSpec{}),
		mk("ingress, 256-byte frame", Config{}, datapath.Ingress, estimate.FrameSpec{Size: 256}),
		mk("ingress, 250-byte frame, snap length 96", Config{Snaplen: 96}, datapath.Ingress, estimate.FrameSpec{Size: 250}),
		mk("ingress, filter udp port 2000", Config{Filter: "udp port 2000"}, datapath.Ingress, estimate.FrameSpec{}),
		mk("ingress, filter net 198.18.0.0/16 and not tcp", Config{Filter: "net 198.18.0.0/16 and not tcp"}, datapath.Ingress, estimate.FrameSpec{}),
		mk("ingress, capture of egress only", Config{Direction: "out"}, datapath.Ingress, estimate.FrameSpec{}),
		mk("ingress, filter tcp port 80 (not taken)", Config{Filter: "tcp port 80"}, datapath.Ingress, estimate.FrameSpec{}),
		mk("ingress, 200-byte frame, filter udp and src net 198.18.0.0/24 and dst port 2000", Config{Filter: "udp and src net 198.18.0.0/24 and dst port 2000"},
			datapath.Ingress, estimate.FrameSpec{Size: 200}),
	}
}
