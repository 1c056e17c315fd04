package p4rt

// StreamChannel: client arbitration (the highest election id is the
// primary), packet-out into the cube's CPU port, and packet-ins and
// digests from the cube's slow path streamed to the primary.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	p4nf "github.com/edgenf/edgenf/internal/nf/p4"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/tenant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// streamQueue bounds the messages waiting to be sent on one stream;
// packet-ins and digests beyond it are dropped (and counted).
const streamQueue = 1024

// device is the server's state for one device id.
type device struct {
	id     uint64
	cube   string
	tenant string // "": the administrator's alone

	mu      sync.Mutex
	streams map[*stream]bool
	saved   *PipelineConfig          // VERIFY_AND_SAVE, for COMMIT
	digests map[uint32]*DigestConfig // digests the controller asked for
	listID  uint64                   // last DigestList.list_id
	poll    context.CancelFunc       // the event poller, while streams are open
	polling chan struct{}            // closed when the poller ends
	dropped atomic.Uint64            // stream messages dropped (queue full)
	writeMu sync.Mutex               // serialises writes and pipeline changes
	// index: the stored entries' keys by P4Runtime match, per table, as of
	// engine revision indexRev (write.go); guarded by writeMu.
	index    map[string]map[string]string
	indexRev uint64
}

func newDevice(id uint64, name string) *device {
	return &device{id: id, cube: name, streams: map[*stream]bool{}, digests: map[uint32]*DigestConfig{}}
}

// stream is one StreamChannel.
type stream struct {
	election *Uint128     // nil until the client's first arbitration update
	who      tenant.Actor // who its packet-outs act as (access)
	out      chan *StreamResponse
}

// primaryLocked returns the stream with the highest election id.
func (d *device) primaryLocked() *stream {
	var p *stream
	for s := range d.streams {
		if s.election != nil && (p == nil || p.election.Less(*s.election)) {
			p = s
		}
	}
	return p
}

// send queues a message for a stream without blocking.
func (d *device) send(s *stream, m *StreamResponse) {
	select {
	case s.out <- m:
	default:
		d.dropped.Add(1)
	}
}

// arbitrationFor is the arbitration update a stream gets: OK for the
// primary, ALREADY_EXISTS for a backup.
func (d *device) arbitrationFor(s, primary *stream) *StreamResponse {
	st := &Status{Code: int32(codes.OK)}
	if s != primary {
		st = &Status{Code: int32(codes.AlreadyExists), Message: "a primary with a higher election id is connected; this client is a backup"}
	}
	e := *primary.election
	return &StreamResponse{Arbitration: &Arbitration{DeviceID: d.id, ElectionID: &e, Status: st}}
}

// notifyLocked sends arbitration updates: to every stream when the primary
// changed, else to s only.
func (d *device) notifyLocked(s, oldPrimary *stream) {
	p := d.primaryLocked()
	if p == nil {
		return
	}
	if p != oldPrimary {
		for o := range d.streams {
			if o.election != nil {
				d.send(o, d.arbitrationFor(o, p))
			}
		}
		return
	}
	if s != nil {
		d.send(s, d.arbitrationFor(s, p))
	}
}

// stopPoll ends the event poller (idle: only if no stream is open).
func (d *device) stopPoll(idle bool) {
	d.mu.Lock()
	if idle && len(d.streams) > 0 {
		d.mu.Unlock()
		return
	}
	cancel, done := d.poll, d.polling
	d.poll, d.polling = nil, nil
	d.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// arbitrate handles a MasterArbitrationUpdate; an error ends the stream.
func (s *Server) arbitrate(ctx context.Context, cur *device, ss *stream, a *Arbitration) (*device, error) {
	if a.Role != nil && (a.Role.Name != "" || a.Role.ID != 0) {
		return nil, errf(codes.Unimplemented, "roles are not supported (role %q); leave the role unset for full pipeline access", a.Role.Name)
	}
	d, who, err := s.access(ctx, a.DeviceID)
	if err != nil {
		return nil, err
	}
	if cur != nil && cur != d {
		return nil, errf(codes.FailedPrecondition, "this stream arbitrates for device %d, not %d", cur.id, a.DeviceID)
	}
	if a.ElectionID == nil {
		return nil, errf(codes.InvalidArgument, "election_id is required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for o := range d.streams {
		if o != ss && o.election != nil && *o.election == *a.ElectionID {
			return nil, errf(codes.InvalidArgument, "election id %s is already used by another client of device %d", a.ElectionID, d.id)
		}
	}
	old := d.primaryLocked()
	e := *a.ElectionID
	ss.election = &e
	ss.who = who
	d.streams[ss] = true
	d.notifyLocked(ss, old)
	if d.poll == nil {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		d.poll, d.polling = cancel, done
		go func() {
			defer close(done)
			s.pollEvents(ctx, d)
		}()
	}
	return d, nil
}

// leave removes a closed stream.
func (s *Server) leave(d *device, ss *stream) {
	d.mu.Lock()
	old := d.primaryLocked()
	delete(d.streams, ss)
	d.notifyLocked(nil, old)
	last := len(d.streams) == 0
	d.mu.Unlock()
	if last {
		d.stopPoll(true)
	}
}

func (s *Server) streamChannel(st grpc.ServerStream) error {
	ss := &stream{out: make(chan *StreamResponse, streamQueue)}
	ctx, cancel := context.WithCancel(st.Context())
	written := make(chan struct{})
	go func() {
		defer close(written)
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-ss.out:
				if ctx.Err() != nil {
					return
				}
				if err := st.SendMsg(m); err != nil {
					cancel()
					return
				}
			}
		}
	}()
	// the writer must not send once the handler has returned; it is
	// waited for, but not forever (a send blocked by a client that does
	// not read)
	defer func() {
		cancel()
		select {
		case <-written:
		case <-time.After(5 * time.Second):
		}
	}()
	var dev *device
	defer func() {
		if dev != nil {
			s.leave(dev, ss)
		}
	}()
	for {
		req := &StreamRequest{}
		if err := st.RecvMsg(req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if req.Arbitration == nil && dev == nil {
			return errf(codes.FailedPrecondition, "the first message of a StreamChannel must be a MasterArbitrationUpdate")
		}
		switch {
		case req.Arbitration != nil:
			d, err := s.arbitrate(st.Context(), dev, ss, req.Arbitration)
			if err != nil {
				return err
			}
			dev = d
		case req.Packet != nil:
			if err := s.packetOut(dev, ss, req.Packet); err != nil {
				st, _ := status.FromError(err)
				dev.send(ss, &StreamResponse{Error: &StreamError{CanonicalCode: int32(st.Code()), Message: st.Message(), PacketOut: req.Packet}})
			}
		case req.DigestAck != nil:
			// digests are not held back waiting for acks: nothing to do
		default:
			dev.send(ss, &StreamResponse{Error: &StreamError{CanonicalCode: int32(codes.Unimplemented), Message: "only arbitration, packet-out and digest acks are served on the stream"}})
		}
	}
}

// packetOut injects a packet-out at the cube's CPU port.
func (s *Server) packetOut(d *device, ss *stream, p *Packet) error {
	d.mu.Lock()
	primary := d.primaryLocked() == ss
	d.mu.Unlock()
	if !primary {
		return errf(codes.PermissionDenied, "packet-out from a backup client of device %d: only the primary may send packets", d.id)
	}
	pl, err := s.pipeline(d, ss.who)
	if err != nil {
		return err
	}
	md := map[string]string{}
	var hdr *p4info.CtrlHeaderLayout
	if sp := pl.info.Edgenf.SlowPath; sp != nil {
		hdr = sp.PacketOut
	}
	for _, m := range p.Metadata {
		if hdr == nil {
			return errf(codes.InvalidArgument, "the program has no @controller_header(\"packet_out\") header: packet-outs carry no metadata")
		}
		var f *p4info.CtrlField
		for i := range hdr.Fields {
			if hdr.Fields[i].ID == m.MetadataID {
				f = &hdr.Fields[i]
			}
		}
		if f == nil {
			return errf(codes.InvalidArgument, "packet_out has no metadata with id %d", m.MetadataID)
		}
		v := new(big.Int).SetBytes(m.Value)
		if v.BitLen() > f.Width {
			return errf(codes.InvalidArgument, "packet_out metadata %s (id %d): value 0x%x does not fit in %d bits", f.Name, f.ID, m.Value, f.Width)
		}
		md[f.Name] = v.String()
	}
	args, _ := json.Marshal(p4nf.PacketOutArgs{Frame: hex.EncodeToString(p.Payload), Metadata: md})
	if _, err := s.eng.Action(ss.who, d.cube, "packet_out", args); err != nil {
		return fromEngine(err)
	}
	return nil
}

// nextSeq is the seq of the device's cube's last slow-path event (0: none):
// where polling starts. It is read whoever's the cube is now: a sequence
// number delivers nothing.
func (s *Server) nextSeq(d *device) uint64 {
	v, err := s.eng.View(tenant.Admin, d.cube, "slowpath")
	if err != nil {
		return 0
	}
	if st, ok := v.(p4nf.SlowPathStats); ok && st.NextSeq > 0 {
		return st.NextSeq - 1
	}
	return 0
}

// pollEvents streams the cube's packet-ins and digests to the primary
// while the device has streams. It acts as the device (actor): once the
// administrator gave the cube to another tenant, nothing more is polled.
func (s *Server) pollEvents(ctx context.Context, d *device) {
	after := s.nextSeq(d)
	for ctx.Err() == nil {
		args, _ := json.Marshal(p4nf.PollArgs{After: after, TimeoutMs: 1000, Max: 256})
		v, err := s.eng.Action(d.actor(), d.cube, "poll", args)
		if err == nil {
			if w, ok := v.(cube.Waiter); ok {
				v, err = w.Wait(ctx)
			}
		}
		res, ok := v.(p4nf.PollResult)
		if err != nil || !ok {
			// No cube, no program yet, or the cube is not the device's
			// tenant's: try again later. A cube created meanwhile numbers
			// its events from 1, and they are all the stream's; else what
			// happened meanwhile was not the device's.
			_, exists := s.eng.CubeHeader(tenant.Admin, d.cube)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			after = 0
			if exists {
				after = s.nextSeq(d)
			}
			continue
		}
		if res.Missed > 0 {
			s.log.Warn("p4rt: slow-path events overwritten before they were streamed", "device", d.id, "cube", d.cube, "missed", res.Missed)
		}
		if len(res.Events) > 0 {
			s.deliver(d, res.Events)
		}
		after = res.Next
		if len(res.Events) == 0 && res.Missed == 0 {
			// idle: a cube deleted and created again numbers its events
			// from 1 again
			if n := s.nextSeq(d); n < after {
				after = n
			}
		}
	}
}

// deliver sends events to the primary.
func (s *Server) deliver(d *device, evs []p4nf.Event) {
	pl, err := s.pipeline(d, d.actor())
	if err != nil {
		return
	}
	sp := pl.info.Edgenf.SlowPath
	for _, ev := range evs {
		var m *StreamResponse
		switch ev.Kind {
		case "packet_in":
			m = packetIn(sp, ev)
		case "digest":
			d.mu.Lock()
			_, wanted := d.digests[ev.ID]
			if wanted {
				d.listID++
			}
			id := d.listID
			d.mu.Unlock()
			if !wanted {
				continue
			}
			m = digestList(sp, ev, id)
		case "idle_timeout":
			m = idleNotification(pl.info, d, ev)
		}
		if m == nil {
			continue
		}
		d.mu.Lock()
		if p := d.primaryLocked(); p != nil {
			d.send(p, m)
		}
		d.mu.Unlock()
	}
}

// minimalBytes is the P4Runtime canonical byte string of v (at least one
// byte).
func minimalBytes(v *big.Int) []byte {
	b := v.Bytes()
	if len(b) == 0 {
		return []byte{0}
	}
	return b
}

func packetIn(sp *p4info.SlowPathLayout, ev p4nf.Event) *StreamResponse {
	payload, err := hex.DecodeString(ev.Frame)
	if err != nil {
		return nil
	}
	p := &Packet{Payload: payload}
	if sp != nil && sp.PacketIn != nil {
		for _, f := range sp.PacketIn.Fields {
			v, ok := new(big.Int).SetString(ev.Fields[f.Name], 10)
			if !ok {
				v = new(big.Int)
			}
			p.Metadata = append(p.Metadata, &PacketMetadata{MetadataID: f.ID, Value: minimalBytes(v)})
		}
	}
	return &StreamResponse{Packet: p}
}

func digestList(sp *p4info.SlowPathLayout, ev p4nf.Event, listID uint64) *StreamResponse {
	dl := sp.Digest(ev.Digest)
	if dl == nil {
		return nil
	}
	data := &P4Data{Kind: "struct"}
	for _, f := range dl.Fields {
		text := ev.Fields[f.Name]
		if f.Bool {
			data.Members = append(data.Members, &P4Data{Kind: "bool", Bool: text == "true"})
			continue
		}
		v, err := p4info.ParseValue(text, f.Width)
		if err != nil {
			v = new(big.Int)
		}
		data.Members = append(data.Members, &P4Data{Kind: "bitstring", Bitstring: minimalBytes(v)})
	}
	return &StreamResponse{Digest: &DigestList{DigestID: dl.ID, ListID: listID, Data: []*P4Data{data}, Timestamp: ev.Time.UnixNano()}}
}

// idleNotification reports an entry of the controller's idle for its
// idle_timeout_ns; learned entries the cube removed itself are not the
// controller's and are not reported.
func idleNotification(info *p4info.P4Info, d *device, ev p4nf.Event) *StreamResponse {
	if ev.Entry == nil || ev.Fields["removed"] == "true" {
		return nil
	}
	t := info.Edgenf.Table(ev.Entry.Table)
	if t == nil {
		return nil
	}
	te, err := fromEntry(t, ev.Entry)
	if err != nil {
		return nil
	}
	te.Metadata = ev.Entry.Metadata
	te.Action = nil // only the key, metadata and idle_timeout_ns are required
	return &StreamResponse{IdleTimeout: &IdleTimeoutNotification{TableEntry: []*TableEntry{te}, Timestamp: ev.Time.UnixNano()}}
}
