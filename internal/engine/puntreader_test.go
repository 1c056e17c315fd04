package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf/perf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/tenant"
)

// fakeRing is a punt ring of a few records, read as edgenfd reads the
// kernel's: a punt that finds it full waits for room (the kernel's would
// be lost).
type fakeRing struct {
	recs   chan perf.Record
	closed chan struct{}
}

func newFakeRing(t *testing.T, size int) *fakeRing {
	r := &fakeRing{recs: make(chan perf.Record, size), closed: make(chan struct{})}
	t.Cleanup(func() { close(r.closed) })
	return r
}

func (r *fakeRing) Read() (perf.Record, error) {
	select {
	case rec := <-r.recs:
		return rec, nil
	case <-r.closed:
		return perf.Record{}, perf.ErrClosed
	}
}

// send puts a punt of cube slot in the ring, its frame 8 octets of when it
// was sent; false if the ring stayed full for wait.
func (r *fakeRing) send(slot, reason uint32, wait time.Duration) bool {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, datapath.PuntHeader{Magic: datapath.PuntMagic, Cube: slot, Reason: reason, PktLen: 8})
	binary.Write(&b, binary.LittleEndian, time.Now().UnixNano())
	select {
	case r.recs <- perf.Record{RawSample: b.Bytes()}:
		return true
	case <-time.After(wait):
		return false
	}
}

// timedRecorder is a controller that passes on the punts it is handed,
// with how long each took from the ring to the handler.
type timedRecorder struct {
	cube.Controller
	got chan time.Duration
}

func (r *timedRecorder) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	r.got <- time.Since(time.Unix(0, int64(binary.LittleEndian.Uint64(p.Frame))))
}

// slowHandler is a controller that takes every punt's time to handle it.
type slowHandler struct {
	cube.Controller
	each    time.Duration
	handled atomic.Int64
}

func (s *slowHandler) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	time.Sleep(s.each)
	s.handled.Add(1)
}

// floodAndTrickle loads cubes flood and trickle (and other, for entry
// changes) with the controllers given (nil: portfwd's), and a punt reader
// on a fake ring.
func floodAndTrickle(t *testing.T, prefix string, flood, trickle cube.Controller) (*Engine, *fakeRing, uint32, uint32) {
	e := testEngine(t, prefix)
	ports := []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}}
	if err := e.Update(func(tp *cube.Topology) error {
		for _, n := range []string{"flood", "trickle", "other"} {
			tp.Put(&cube.Cube{Name: n, Type: "portfwd", Hook: datapath.XDP, Ports: slices.Clone(ports)})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	if flood != nil {
		e.cubes["flood"].ctl, e.cubes["trickle"].ctl = flood, trickle
	}
	fs, ts := e.slots["flood"], e.slots["trickle"]
	e.mu.Unlock()
	ring := newFakeRing(t, 64)
	go e.readPunts(ring)
	return e, ring, fs, ts
}

// TestPuntReaderReadsWhileTheLockIsHeld: a change holding the engine's
// lock does not stop the punt reader. One cube floods 2,000 punts through
// a ring of 64 records while the lock is held: the ring never stays full
// (the kernel's would overrun and lose every cube's punts), the flood's
// excess is dropped from its own queue, and another cube's 20 punts,
// interleaved with the flood, all reach its controller once the lock is
// released.
func TestPuntReaderReadsWhileTheLockIsHeld(t *testing.T) {
	trickle := &timedRecorder{got: make(chan time.Duration, 64)}
	flood := &slowHandler{}
	e, ring, fs, ts := floodAndTrickle(t, "enfprd", flood, trickle)
	trickle.Controller, flood.Controller = e.cubes["trickle"].ctl, e.cubes["flood"].ctl

	full := func() string {
		e.mu.Lock() // a long change
		defer e.mu.Unlock()
		for i := range 2000 {
			if !ring.send(fs, 1, 5*time.Second) {
				return "a flood punt"
			}
			if i%100 == 0 && !ring.send(ts, 2, 5*time.Second) {
				return "a trickle punt"
			}
		}
		return ""
	}()
	if full != "" {
		t.Fatalf("%s found the ring full for 5 s: the reader stopped while the engine's lock was held", full)
	}
	for i := range 20 {
		select {
		case <-trickle.got:
		case <-time.After(30 * time.Second):
			t.Fatalf("trickle's controller got %d of its 20 punts", i)
		}
	}
}

// TestPuntFloodDelaysNoOtherCube: one cube floods its slow path (3,000
// punts a second, its handler taking 20 ms each, so its queue overflows)
// while another sends a punt every 10 ms: each of those reaches its
// controller within 100 ms, and one-rule changes of a third cube made
// meanwhile do not wait for the flood's handling (median under 100 ms,
// where a batch handled under the lock would hold them 640 ms).
func TestPuntFloodDelaysNoOtherCube(t *testing.T) {
	trickle := &timedRecorder{got: make(chan time.Duration, 64)}
	flood := &slowHandler{each: 20 * time.Millisecond}
	e, ring, fs, ts := floodAndTrickle(t, "enfpfl", flood, trickle)
	trickle.Controller, flood.Controller = e.cubes["trickle"].ctl, e.cubes["flood"].ctl

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the flood: 3 punts a millisecond, lost when the ring is full
		defer wg.Done()
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				for range 3 {
					ring.send(fs, 1, 0)
				}
			}
		}
	}()
	const trickles = 50
	var changes []time.Duration
	for i := range trickles {
		time.Sleep(10 * time.Millisecond)
		if !ring.send(ts, 2, 5*time.Second) {
			t.Fatal("the ring stayed full for 5 s")
		}
		if i%5 == 0 {
			start := time.Now()
			if err := e.ChangeEntries(tenant.Admin, "other", "rules", func(tx *EntryTx) error {
				_, err := tx.Put(json.RawMessage(`{"in_port":"p0","out_port":"p1"}`))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			changes = append(changes, time.Since(start))
		}
	}
	var worst time.Duration
	for i := range trickles {
		select {
		case d := <-trickle.got:
			worst = max(worst, d)
		case <-time.After(30 * time.Second):
			t.Fatalf("trickle's controller got %d of its %d punts", i, trickles)
		}
	}
	close(stop)
	wg.Wait()
	sort.Slice(changes, func(i, j int) bool { return changes[i] < changes[j] })
	t.Logf("flood handled %d; trickle's slowest punt %v; one-rule changes %v", flood.handled.Load(), worst, changes)
	if worst > 100*time.Millisecond {
		t.Errorf("a trickle punt took %v from the ring to its controller, behind the flood (want ≤ 100ms)", worst)
	}
	if m := changes[len(changes)/2]; m > 100*time.Millisecond {
		t.Errorf("one-rule changes took %v (median) during the flood: they waited for its handling", m)
	}
}

// TestSlowCopyIsSentByTheCubesWorker: a copy the fast path could not make
// (reason PuntTransmit) is transmitted by its cube's punt worker, and
// counted in the cube's stats, whatever the cube's controller.
func TestSlowCopyIsSentByTheCubesWorker(t *testing.T) {
	e, ring, fs, _ := floodAndTrickle(t, "enfpsc", nil, nil)
	for range 3 {
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, datapath.PuntHeader{Magic: datapath.PuntMagic, Cube: fs, Reason: datapath.PuntTransmit, Arg: 1, PktLen: 60})
		b.Write(make([]byte, 60))
		ring.recs <- perf.Record{RawSample: b.Bytes()}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := e.Stats(tenant.Admin, "flood")
		if err != nil {
			t.Fatal(err)
		}
		if st.SlowCopies == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("flood's stats count %d slow copies, want 3", st.SlowCopies)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
