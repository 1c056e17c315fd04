package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/tenant"
)

// puntSeen is what a punt handler saw: the rows of its cube's rules
// table, and whether its handle's map could be read.
type puntSeen struct {
	rows   int
	mapErr error
}

// gatedHandler is a controller whose punts of reason gatedReason wait
// for the test to let each go; every punt reports what it saw.
type gatedHandler struct {
	cube.Controller
	gate    chan struct{}
	entered chan struct{} // a gated punt is in hand
	saw     chan puntSeen
}

const gatedReason = 7

func (g *gatedHandler) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	if p.Reason == gatedReason {
		g.entered <- struct{}{}
		<-g.gate
	}
	seen := puntSeen{rows: len(c.Tables["rules"])}
	if m, err := h.Map("pf_table"); err != nil {
		seen.mapErr = err
	} else {
		v := make([]byte, m.ValueSize())
		seen.mapErr = m.Lookup(uint32(0), &v)
	}
	g.saw <- seen
}

func newGated() *gatedHandler {
	return &gatedHandler{gate: make(chan struct{}), entered: make(chan struct{}, 64), saw: make(chan puntSeen, 64)}
}

func (g *gatedHandler) next(t *testing.T, what string) puntSeen {
	t.Helper()
	select {
	case s := <-g.saw:
		return s
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: not handed to the controller within 20 s", what)
		return puntSeen{}
	}
}

// TestPuntWorkerHandlesWhileTheLockIsHeld: once a cube's punt worker has
// its view of the cube (after its first punt), a change holding the
// engine's lock does not stop it: 20 punts reach the controller while the
// lock is held. Its view follows the cube: an entry change made after is
// seen by the next punt.
func TestPuntWorkerHandlesWhileTheLockIsHeld(t *testing.T) {
	flood := newGated()
	e, ring, fs, _ := floodAndTrickle(t, "enfpwl", flood, &timedRecorder{got: make(chan time.Duration, 64)})
	flood.Controller = portfwd.Type.New()
	if !ring.send(fs, 1, 5*time.Second) {
		t.Fatal("the ring stayed full")
	}
	if s := flood.next(t, "the first punt"); s.mapErr != nil || s.rows != 0 {
		t.Fatalf("the first punt saw %+v, want no rules and its map", s)
	}
	func() {
		e.mu.Lock() // a long change
		defer e.mu.Unlock()
		for i := range 20 {
			if !ring.send(fs, 1, 5*time.Second) {
				t.Fatal("the ring stayed full")
			}
			if s := flood.next(t, "a punt while the engine's lock is held"); s.mapErr != nil {
				t.Fatalf("punt %d could not read its cube's map: %v", i, s.mapErr)
			}
		}
	}()
	if err := e.ChangeEntries(tenant.Admin, "flood", "rules", func(tx *EntryTx) error {
		_, err := tx.Put(json.RawMessage(`{"in_port":"p0","out_port":"p1"}`))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ring.send(fs, 1, 5*time.Second)
	if s := flood.next(t, "a punt after an entry change"); s.rows != 1 {
		t.Errorf("a punt after a rule was added saw %d rules, want 1", s.rows)
	}
}

// TestDeletedCubeMidBatchHandlesNoMorePunts: a cube deleted while its
// worker is in the middle of a batch (its controller busy with the
// batch's first punt) is deleted without waiting for the worker; the punt
// in hand finishes on the maps it was given, and the batch's other punts
// are not handed over.
func TestDeletedCubeMidBatchHandlesNoMorePunts(t *testing.T) {
	flood := newGated()
	e, ring, fs, _ := floodAndTrickle(t, "enfpwd", flood, &timedRecorder{got: make(chan time.Duration, 64)})
	flood.Controller = portfwd.Type.New()
	e.mu.Lock()
	sink := e.cubes["flood"].sink
	e.mu.Unlock()
	// a: the worker is in its first batch, held at its one punt
	ring.send(fs, gatedReason, 5*time.Second)
	select {
	case <-flood.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the first punt did not reach the controller within 20 s")
	}
	// the next batch: 9 punts queued behind it
	for range 9 {
		ring.send(fs, gatedReason, 5*time.Second)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(sink.q) < 9 {
		if time.Now().After(deadline) {
			t.Fatalf("%d punts queued behind the first, want 9", len(sink.q))
		}
		time.Sleep(5 * time.Millisecond)
	}
	flood.gate <- struct{}{} // a handled; the worker takes the 9 as one batch, held at its first
	if s := flood.next(t, "the first punt"); s.mapErr != nil {
		t.Fatalf("the first punt could not read its map: %v", s.mapErr)
	}
	select {
	case <-flood.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the second batch's first punt did not reach the controller within 20 s")
	}
	if n := len(sink.q); n > 0 {
		t.Fatalf("%d punts still queued: the second batch did not take them all", n)
	}
	within(t, "deleting the cube while its worker is in a batch", func() error {
		return e.Update(func(tp *cube.Topology) error {
			return tp.DeleteCube("flood")
		})
	})
	close(flood.gate) // the punt in hand goes on, and any other would
	if s := flood.next(t, "the punt in hand"); s.mapErr != nil {
		t.Errorf("the punt in hand when its cube went could not read the maps it was given: %v", s.mapErr)
	}
	select {
	case s := <-flood.saw:
		t.Errorf("a punt queued in the batch was handed over after its cube was deleted (it saw %+v)", s)
	case <-time.After(500 * time.Millisecond):
	}
}
