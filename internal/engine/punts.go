package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
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
}

// puntQueue is how many punted packets wait for a cube's worker; more are
// dropped (and counted) until it catches up.
const puntQueue = 256

// puntBatch is how many queued punts a worker hands over for one visit
// to the engine's lock (offLockCall takes it to begin and to end).
const puntBatch = 32

// bindSlot makes l the cube of its panel slot, for the engine and for the
// punt reader. A cube that held the slot before (a down cube's stand-in
// replaced by its program) loses its punt worker. Called with e.mu held.
func (e *Engine) bindSlot(l *live) {
	e.bySlot[l.dc.Slot] = l
	l.sink = &puntSink{l: l, hook: l.dc.Hook, name: l.dc.Name, gone: make(chan struct{})}
	if old := e.sinks[l.dc.Slot].Swap(l.sink); old != nil && old.l != l {
		old.stop()
	}
}

// unbindSlot frees l's panel slot: punts naming it are dropped from now
// on. Called with e.mu held.
func (e *Engine) unbindSlot(l *live) {
	delete(e.bySlot, l.dc.Slot)
	e.sinks[l.dc.Slot].CompareAndSwap(l.sink, nil)
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
// controller, up to puntBatch at a time, without the engine's lock but
// to begin and end a batch (offLockCall), and transmits the copies the
// fast path could not make (copy.h), until the cube goes.
func (e *Engine) drainPunts(s *puntSink, q <-chan cube.Punt) {
	batch := make([]cube.Punt, 0, puntBatch)
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
		err := e.offLockCall(s.l, func(h cube.Handle, c *cube.Cube) error {
			ph, _ := h.Controller().(cube.PuntHandler)
			for _, p := range batch {
				if s.l.gone.Load() { // a deleted cube's queued punts are not handed over
					return nil
				}
				if p.Reason != datapath.PuntTransmit {
					if ph != nil {
						ph.HandlePunt(h, c, p)
					}
					continue
				}
				// a copy the fast path could not make (copy.h): out of port Arg
				s.l.slowCopies.Add(1)
				if err := h.Transmit(int(p.Arg), p.Frame); err != nil {
					e.log.Debug("slow-path copy not sent", "cube", s.name, "port", p.Arg, "err", err)
				}
			}
			return nil
		})
		if err != nil && !s.l.gone.Load() {
			e.log.Debug("punts not handled", "cube", s.name, "err", err)
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
