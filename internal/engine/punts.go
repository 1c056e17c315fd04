package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/perf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// packetIO is the slow path's packet I/O: it reads the packets the fast path
// punts and hands each to its cube's controller, and injects the frames
// controllers send back into the fast path. It also drives the controllers'
// ticks (controllers.go), stopped with it.
type packetIO struct {
	e      *Engine
	reader *perf.Reader
	inj    *datapath.Injector
	done   chan struct{}
	exited chan struct{}
}

const tickEvery = time.Second

func startPacketIO(e *Engine) (*packetIO, error) {
	inj, err := e.dp.OpenInjector()
	if err != nil {
		return nil, err
	}
	rd, err := perf.NewReader(e.dp.PuntMap(), 64*os.Getpagesize())
	if err != nil {
		inj.Close()
		return nil, err
	}
	s := &packetIO{e: e, reader: rd, inj: inj, done: make(chan struct{}), exited: make(chan struct{}, 2)}
	go func() {
		defer func() { s.exited <- struct{}{} }()
		e.readPunts(rd)
	}()
	go s.tick()
	return s, nil
}

// puntRing is where the punt reader reads: the kernel's punt ring
// (perf.Reader), a fake one in tests.
type puntRing interface {
	Read() (perf.Record, error)
}

// readPunts reads the punts until the ring is closed and hands each to
// its cube's queue (punt). It takes no lock: a change holding the
// engine's lock does not stop it, so the ring does not overrun meanwhile,
// and what it does for a punt is the same small work whatever the cube,
// so a cube flooding its slow path within its budget delays another
// cube's punts by no more than reading its own (the kernel's per-cube
// punt budget bounds those).
func (e *Engine) readPunts(ring puntRing) {
	for {
		rec, err := ring.Read()
		if errors.Is(err, perf.ErrClosed) {
			return
		}
		if err != nil || rec.LostSamples > 0 {
			if rec.LostSamples > 0 {
				e.log.Warn("slow path overrun", "lost", rec.LostSamples)
			}
			continue
		}
		var hdr datapath.PuntHeader
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &hdr); err != nil || hdr.Magic != datapath.PuntMagic {
			continue
		}
		n := binary.Size(hdr)
		frame := rec.RawSample[n:]
		if capLen := int(min(hdr.PktLen, datapath.PuntSnaplen)); len(frame) > capLen {
			frame = frame[:capLen]
		}
		hook := datapath.XDP
		if hdr.Hook == 1 {
			hook = datapath.TC
		}
		e.punt(hook, hdr.Cube, cube.Punt{
			InPort: int(hdr.InPort), Reason: hdr.Reason, Arg: hdr.Arg,
			PktLen: int(hdr.PktLen), Ifindex: int(hdr.Ifindex), Frame: append([]byte(nil), frame...),
		})
	}
}

// puntSink is what the punt reader needs of a loaded cube, published by
// panel slot (Engine.sinks) when the cube takes its slot: the reader finds
// it without the engine's lock.
type puntSink struct {
	l    *live
	hook datapath.Hook
	name string
	// q is the cube's punt queue and drops counts the punts a full q
	// refused: the reader's alone (made at the cube's first punt, with the
	// worker that empties it).
	q     chan cube.Punt
	drops uint64
	// gone ends the worker; stopped: it was closed (guarded by e.mu).
	gone    chan struct{}
	stopped bool
	// view is what the worker needs of the engine, published by the
	// engine (nil until the worker's first batch asks for it, and once
	// the cube goes): the worker reads it without the engine's lock.
	view atomic.Pointer[puntView]
}

// puntView is the engine's state a punt worker hands punts over with: the
// handle of a call without the engine's lock (duplicated maps, hops,
// attachment point, packet I/O) and the cube as synced. The engine makes
// a new one when any of it changes (publishPuntView) and never changes
// one: a batch runs on the view it began with, and the last release of a
// replaced view gives back its maps.
type puntView struct {
	h     *offLock
	c     *cube.Cube
	attch string
	// refs: 1 while published, and one per batch on it
	refs atomic.Int32
}

// acquire returns the sink's view with a reference for a batch, nil if
// there is none.
func (s *puntSink) acquire() *puntView {
	for {
		v := s.view.Load()
		if v == nil {
			return nil
		}
		if n := v.refs.Load(); n > 0 && v.refs.CompareAndSwap(n, n+1) {
			return v
		}
		// replaced and released meanwhile: the new one is published
	}
}

func (v *puntView) release() {
	if v.refs.Add(-1) == 0 {
		v.h.dups.release()
	}
}

// dropView unpublishes the sink's view (the cube goes, or the engine
// closes). Called with e.mu held.
func (s *puntSink) dropView() {
	if s == nil {
		return
	}
	if v := s.view.Swap(nil); v != nil {
		v.release()
	}
}

// puntQueue is how many punted packets wait for a cube's worker; more are
// dropped (and counted) until it catches up.
const puntQueue = 256

// puntBatch is how many queued punts a worker hands over at a time.
const puntBatch = 32

// bindSlot makes l the cube of its panel slot, for the engine and for the
// punt reader. A cube that held the slot before (a down cube's stand-in
// replaced by its program) loses its punt worker. Called with e.mu held.
func (e *Engine) bindSlot(l *live) {
	e.bySlot[l.dc.Slot] = l
	l.sink = &puntSink{l: l, hook: l.dc.Hook, name: l.dc.Name, gone: make(chan struct{})}
	if old := e.sinks[l.dc.Slot].Swap(l.sink); old != nil && old.l != l {
		old.stop()
		old.dropView()
		delete(e.punting, old.l)
	}
}

// unbindSlot frees l's panel slot: punts naming it are dropped from now
// on. Called with e.mu held.
func (e *Engine) unbindSlot(l *live) {
	delete(e.bySlot, l.dc.Slot)
	e.sinks[l.dc.Slot].CompareAndSwap(l.sink, nil)
	delete(e.punting, l)
	l.sink.dropView()
}

// publishPuntView gives l's punt worker, if it has asked for one, a view
// of l as it is now, unless the one it has is still that. Called with
// e.mu held, after anything a view holds may have changed: a reconcile
// (programs, hops, syncs, attachments), an entry change.
func (e *Engine) publishPuntView(l *live) {
	if !e.punting[l] || l.gone.Load() || l.c == nil {
		return
	}
	old := l.sink.view.Load()
	if old != nil && old.c == l.c && old.attch == l.attch && old.h.dups.of == l.dc && old.h.io == e.pio &&
		maps.Equal(old.h.hops, l.hops) && old.h.point == e.current().AttachedTo(l.dc.Name) {
		return
	}
	h, err := e.detached(l, true)
	if err != nil {
		// the worker keeps the view it has (or, without one, drops the
		// cube's punts) until the next change publishes one
		e.log.Warn("slow path: the cube's punt worker keeps its view of the cube", "cube", l.dc.Name, "err", err)
		return
	}
	v := &puntView{h: h, c: l.c, attch: l.attch}
	v.refs.Store(1)
	if old := l.sink.view.Swap(v); old != nil {
		old.release()
	}
}

// publishPuntViews is publishPuntView for every cube with a punt worker.
func (e *Engine) publishPuntViews() {
	for l := range e.punting {
		e.publishPuntView(l)
	}
}

// sharesCube says whether calls without the engine's lock may be reading
// l.c (offLockCall's, or a punt worker's view): a change then replaces
// what it changes instead of writing into it. Called with e.mu held.
func (l *live) sharesCube() bool {
	if l.readers > 0 {
		return true
	}
	if l.sink == nil {
		return false
	}
	v := l.sink.view.Load()
	return v != nil && v.c == l.c
}

// askPuntView is a punt worker's first call, the one that takes the
// engine's lock: from then on the engine publishes the cube's view for it
// (publishPuntView). false: the cube went.
func (e *Engine) askPuntView(s *puntSink) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.l.gone.Load() || s.l.sink != s {
		return false
	}
	e.punting[s.l] = true
	e.publishPuntView(s.l)
	return s.view.Load() != nil
}

// stop ends the sink's worker. Called with e.mu held.
func (s *puntSink) stop() {
	if s != nil && !s.stopped {
		s.stopped = true
		close(s.gone)
	}
}

// punt hands a punted packet to its cube's queue, without the engine's
// lock; the cube's own worker takes it from there (drainPunts), so a
// controller slow to handle its punts delays only its own cube's, never
// another tenant's, nor the API. Called by one goroutine at a time (the
// reader).
func (e *Engine) punt(hook datapath.Hook, slot uint32, p cube.Punt) {
	if slot >= uint32(len(e.sinks)) {
		return
	}
	s := e.sinks[slot].Load()
	if s == nil || s.hook != hook {
		return
	}
	if s.q == nil {
		s.q = make(chan cube.Punt, puntQueue)
		go e.drainPunts(s, s.q)
	}
	select {
	case s.q <- p:
	default:
		if s.drops++; s.drops&(s.drops-1) == 0 { // 1, 2, 4, ...: not a log line a punt
			e.log.Warn("slow path: the cube's controller is behind, punted packets dropped", "cube", s.name, "dropped", s.drops)
		}
	}
}

// drainPunts is a cube's punt worker: it hands the queued punts to the
// controller, up to puntBatch at a time, and transmits the copies the
// fast path could not make (copy.h), until the cube goes. It runs on the
// view of the engine's state the engine publishes for it (puntView): but
// for its first batch, it does not take the engine's lock, so neither a
// long change nor another cube's calls hold it up, and a flood of punts
// does not contend with the API. A batch runs on the view it began with;
// punts of a cube that went meanwhile are dropped.
func (e *Engine) drainPunts(s *puntSink, q <-chan cube.Punt) {
	batch := make([]cube.Punt, 0, puntBatch)
	asked := false
	for {
		select {
		case <-s.gone:
			return
		case p := <-q:
			batch = append(batch[:0], p)
		}
	fill:
		for len(batch) < puntBatch {
			select {
			case p := <-q:
				batch = append(batch, p)
			default:
				break fill
			}
		}
		v := s.acquire()
		if v == nil && !asked {
			asked = true
			if e.askPuntView(s) {
				v = s.acquire()
			}
		}
		if v == nil {
			continue // the cube went, or has no view: its punts drop
		}
		e.handlePunts(s, v, batch)
		v.release()
	}
}

// handlePunts hands a batch to the controller on view v.
func (e *Engine) handlePunts(s *puntSink, v *puntView, batch []cube.Punt) {
	ph, _ := v.h.ctl.(cube.PuntHandler)
	for _, p := range batch {
		if s.l.gone.Load() { // a deleted cube's queued punts are not handed over
			return
		}
		if p.Reason != datapath.PuntTransmit {
			if ph != nil {
				ph.HandlePunt(v.h, v.c, p)
			}
			continue
		}
		// a copy the fast path could not make (copy.h): out of port Arg
		s.l.slowCopies.Add(1)
		if err := v.h.Transmit(int(p.Arg), p.Frame); err != nil {
			e.log.Debug("slow-path copy not sent", "cube", s.name, "port", p.Arg, "err", err)
		}
	}
}

func (s *packetIO) tick() {
	defer func() { s.exited <- struct{}{} }()
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			s.e.tick(now)
		}
	}
}

func (s *packetIO) inject(hook datapath.Hook, hop datapath.Hop, frame []byte) error {
	if s == nil { // a controller's Sync while the state is restored
		return errors.New("the slow path is not running yet")
	}
	return s.inj.Send(hook, hop, frame)
}

// stop ends the goroutines. Called with e.mu held: the ticker takes e.mu
// and the reader none, so they are not waited for here beyond closing their
// inputs.
func (s *packetIO) stop() {
	close(s.done)
	s.reader.Close()
	s.inj.Close()
}
