package scenarios

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/datapath"
	nfcapture "github.com/edgenf/edgenf/internal/nf/capture"
)

// Packet capture (issue 18): a chain of four portfwd cubes at XDP, without
// any capture code (the baseline), with a capture cube loaded but attached
// nowhere (what every chain runs while no capture does: a capture point
// costs nothing until a capture is attached there), and with a capture of
// every frame at the middle of the chain, its ring drained by a reader as
// edgenfd's is.
func init() {
	const n = 4
	scenario.Register(scenario.Scenario{
		Name: "capture-none-xdp", Group: "capture", Baseline: true, Quick: true,
		Doc:   fmt.Sprintf("%d portfwd cubes in a chain at XDP, no capture cube loaded", n),
		Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupChain(e, datapath.XDP, n, n) },
	})
	scenario.Register(scenario.Scenario{
		Name: "capture-idle-xdp", Group: "capture", Order: 10, Quick: true,
		Doc: "the same chain with a capture cube loaded in the patch panel but attached nowhere " +
			"(target ≥ 0.98: the hops are the same, no capture code runs)",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupCapture(e, n, false) },
	})
	scenario.Register(scenario.Scenario{
		Name: "capture-all-xdp", Group: "capture", Order: 20, Quick: true,
		Doc: "the same chain capturing every frame between its first two cubes (whole frames, no filter, no rate bound), " +
			"the ring read as edgenfd reads it; info: frames the capture saw, copied, and lost (ring full)",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupCapture(e, n, true) },
	})
}

func setupCapture(e *scenario.Env, n int, attached bool) (*scenario.Topology, error) {
	var capCube *datapath.Program
	var loaded time.Duration
	t, err := setupChainTap(e, datapath.XDP, n, n, func(d *datapath.Datapath) ([]datapath.Transparent, error) {
		obj, err := nfcapture.Type.Object(datapath.XDP)
		if err != nil {
			return nil, err
		}
		spec, err := datapath.LoadSpec(obj)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		if capCube, err = d.LoadCube("capture", datapath.XDP, uint32(n), spec, nil); err != nil {
			return nil, err
		}
		loaded = time.Since(t0) // the verifier, mostly: what a capture's start waits for
		e.Defer(func() { capCube.Close() })
		if err := nfcapture.Configure(capCube, &nfcapture.Config{Rate: -1}); err != nil {
			return nil, err
		}
		if !attached {
			return nil, nil
		}
		return []datapath.Transparent{{Slot: uint32(n), Dir: datapath.Ingress}}, nil
	})
	if err != nil {
		return t, err
	}
	t.Info["capture load"] = loaded.Round(10 * time.Microsecond).String()
	if !attached {
		return t, nil
	}
	rd, err := nfcapture.Open(capCube)
	if err != nil {
		return nil, err
	}
	var (
		stop      atomic.Bool
		delivered uint64
		wg        sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if _, _, err := rd.Next(time.Now().Add(100 * time.Millisecond)); err == nil {
				delivered++
			}
		}
	}()
	// The capture's counters are known once the trials are done: the
	// report is written after the scenarios are torn down.
	e.Defer(func() {
		stop.Store(true)
		wg.Wait()
		s, err := rd.Stats()
		rd.Close()
		if err != nil || s.Seen == 0 {
			return
		}
		t.Info["capture"] = fmt.Sprintf("%d frames seen, %d copied to the ring (%.2f%%), %d lost for want of ring space (%.2f%%), %d read",
			s.Seen, s.Captured, 100*float64(s.Captured)/float64(s.Seen), s.RingDrop, 100*float64(s.RingDrop)/float64(s.Seen), delivered)
	})
	return t, nil
}
