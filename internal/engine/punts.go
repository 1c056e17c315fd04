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
	go s.readPunts()
	go s.tick()
	return s, nil
}

func (s *packetIO) readPunts() {
	defer func() { s.exited <- struct{}{} }()
	for {
		rec, err := s.reader.Read()
		if errors.Is(err, perf.ErrClosed) {
			return
		}
		if err != nil || rec.LostSamples > 0 {
			if rec.LostSamples > 0 {
				s.e.log.Warn("slow path overrun", "lost", rec.LostSamples)
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
		s.e.punt(hook, hdr.Cube, cube.Punt{
			InPort: int(hdr.InPort), Reason: hdr.Reason, Arg: hdr.Arg,
			PktLen: int(hdr.PktLen), Ifindex: int(hdr.Ifindex), Frame: append([]byte(nil), frame...),
		})
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

// stop ends the goroutines. Called with e.mu held: the goroutines only take
// e.mu briefly, so they are not waited for here beyond closing their inputs.
func (s *packetIO) stop() {
	close(s.done)
	s.reader.Close()
	s.inj.Close()
}
