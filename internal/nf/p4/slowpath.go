package p4

// The slow path of a p4 cube: what the program punts (digests, packet-ins,
// log_msg lines) and the ring of recent events a cube keeps. Learning rules
// are in learn.go, long polls in poll.go, packet-out in packetout.go, the
// read-only views in views.go.

import (
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	p4c "github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/p4info"
)

const (
	// eventBuffer bounds the recent digests and packet-ins a cube keeps.
	eventBuffer = 1024
	// DefaultLearnMax bounds the entries learning rules install.
	DefaultLearnMax = 4096
	// maxPollWait bounds one long poll.
	maxPollWait = 60 * time.Second
	// logRate and logBurst limit the log_msg lines a cube writes to the
	// daemon's log (per second, burst); the rest are counted.
	logRate  = 20
	logBurst = 100
)

// Event is a digest or a packet-in the cube received.
type Event struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"` // "digest", "packet_in" or "idle_timeout"
	// Port is the cube port the packet came in on.
	Port int `json:"port"`
	// Digest: its name and P4Info id.
	Digest string `json:"digest,omitempty"`
	ID     uint32 `json:"id,omitempty"`
	// Fields: the digest's fields, or the packet_in header's metadata.
	Fields map[string]string `json:"fields,omitempty"`
	// Packet-in: the frame after the packet_in header (hex) and its
	// length on the wire.
	Frame  string `json:"frame,omitempty"`
	Length int    `json:"length,omitempty"`
	// Idle timeout: the entry (Fields has its table, key and idle time,
	// and removed=true for a learned entry taken out).
	Entry *Entry `json:"entry,omitempty"`
}

// LearnedEntry is an entry a learning rule installed.
type LearnedEntry struct {
	Entry
	Digest  string    `json:"digest"`
	Learned time.Time `json:"learned"`
	// From names the digest (type and values) the entry was learned from:
	// entries learned from one digest time out together. Empty for
	// entries found in the kernel after a daemon restart.
	From string `json:"from,omitempty"`
}

// SlowPathStats are the cube's slow-path counters.
type SlowPathStats struct {
	// from the kernel
	DigestsSent uint64 `json:"digests_sent"`
	DigestsLost uint64 `json:"digests_lost"` // the punt ring was full
	LogsSent    uint64 `json:"logs_sent"`
	LogsLost    uint64 `json:"logs_lost"` // ring full or over the per-CPU rate limit
	// in the daemon
	Digests        uint64 `json:"digests"`         // received and decoded
	PacketIns      uint64 `json:"packet_ins"`      // received
	Overwritten    uint64 `json:"overwritten"`     // events pushed out of the buffer of recent ones
	Malformed      uint64 `json:"malformed"`       // unknown digest or log index, short data, packet-in shorter than its header
	Learned        uint64 `json:"learned"`         // entries installed by learning rules
	LearnFailed    uint64 `json:"learn_failed"`    // entries that could not be written
	LearnFull      uint64 `json:"learn_full"`      // digests ignored: learn_max entries learned
	LogsSuppressed uint64 `json:"logs_suppressed"` // log_msg lines over the daemon's rate limit
	PacketOuts     uint64 `json:"packet_outs"`     // injected
	IdleTimeouts   uint64 `json:"idle_timeouts"`   // idle_timeout events
	Unlearned      uint64 `json:"unlearned"`       // learned entries removed after their idle timeout
	LearnedEntries int    `json:"learned_entries"` // entries now learned
	BufferedEvents int    `json:"buffered_events"` // events now in the buffer
	NextSeq        uint64 `json:"next_seq"`        // seq of the next event
}

// slowState is a cube's slow-path state (in the daemon's memory).
type slowState struct {
	mu      sync.Mutex
	events  []Event // ring, oldest first
	next    uint64  // seq of the next event (first is 1)
	notify  chan struct{}
	learned map[string]*LearnedEntry
	// idleEntries: the configured entries with an idle timeout; idleDue:
	// when an entry is next looked at (both by key; idle.go)
	idleEntries map[string]*Entry
	idleDue     map[string]time.Time
	st          SlowPathStats
	// synced is the program the learned entries were last written for
	synced *p4c.Result
	// log rate limit
	tokens  float64
	last    time.Time
	dropped uint64 // suppressed since the last line written
}

func newSlowState() *slowState {
	return &slowState{next: 1, notify: make(chan struct{}), learned: map[string]*LearnedEntry{}, idleEntries: map[string]*Entry{}, idleDue: map[string]time.Time{}, tokens: logBurst}
}

// add appends an event and wakes the pollers. Called with mu held.
func (s *slowState) add(ev Event) {
	ev.Seq = s.next
	s.next++
	if len(s.events) >= eventBuffer {
		copy(s.events, s.events[1:])
		s.events = s.events[:len(s.events)-1]
		s.st.Overwritten++
	}
	s.events = append(s.events, ev)
	close(s.notify)
	s.notify = make(chan struct{})
}

// since returns up to max events after seq of a kind ("" any), the number
// missed (overwritten before they could be read), and a channel closed on
// the next event.
func (s *slowState) since(after uint64, kind string, max int) ([]Event, uint64, uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var missed uint64
	if len(s.events) > 0 && after+1 < s.events[0].Seq {
		missed = s.events[0].Seq - after - 1
	}
	out := []Event{}
	last := after
	for _, ev := range s.events {
		if ev.Seq <= after {
			continue
		}
		if len(out) >= max {
			break
		}
		last = ev.Seq
		if kind == "" || ev.Kind == kind {
			out = append(out, ev)
		}
	}
	if len(out) < max {
		last = max64(last, s.next-1)
	}
	return out, missed, last, s.notify
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// allowLog reports whether a log line may be written now; n is the number
// suppressed since the last one written.
func (s *slowState) allowLog(now time.Time) (bool, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.last.IsZero() {
		s.tokens += now.Sub(s.last).Seconds() * logRate
		if s.tokens > logBurst {
			s.tokens = logBurst
		}
	}
	s.last = now
	if s.tokens < 1 {
		s.dropped++
		s.st.LogsSuppressed++
		return false, 0
	}
	s.tokens--
	n := s.dropped
	s.dropped = 0
	return true, n
}

// stateOf returns the slow-path state of the cube behind h.
func stateOf(h cube.Handle) (*slowState, error) {
	if c, ok := h.Controller().(controller); ok && c.sp != nil {
		return c.sp, nil
	}
	return nil, fmt.Errorf("the cube has no p4 controller")
}

// settingsOf decodes the cube's settings.
func settingsOf(c *cube.Cube) (*Settings, error) {
	v, err := cube.Decode("config", c.Config, &Settings{})
	if err != nil {
		return nil, err
	}
	return v.(*Settings), nil
}

// HandlePunt receives what the program sent to the slow path.
func (ctl controller) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	s := ctl.sp
	if s == nil {
		return
	}
	s.mu.Lock()
	r := s.synced // the program Sync last saw: no decoding per punt
	s.mu.Unlock()
	if r == nil {
		var err error
		if r, err = programOf(c); err != nil {
			return
		}
	}
	sp := r.Info.Edgenf.SlowPath
	now := time.Now()
	var err error
	switch p.Reason {
	case ir.PuntDigest:
		d := sp.DigestAt(p.Arg)
		var fv []p4info.FieldValue
		if d != nil {
			fv, err = d.Decode(p.Frame)
		}
		if d == nil || err != nil {
			s.mu.Lock()
			s.st.Malformed++
			s.mu.Unlock()
			if ok, _ := s.allowLog(now); ok {
				if d == nil {
					h.Logf("p4: digest with unknown index %d (the program's digests: %s)", p.Arg, digestNames(sp))
				} else {
					h.Logf("p4: %v", err)
				}
			}
			return
		}
		vals := map[string]string{}
		for _, f := range fv {
			vals[f.Name] = f.Value
		}
		s.mu.Lock()
		s.st.Digests++
		s.add(Event{Time: now, Kind: "digest", Port: p.InPort, Digest: d.Name, ID: d.ID, Fields: vals})
		s.mu.Unlock()
		ctl.learn(h, c, r.Info, d, vals, now)
		ctl.ints.observe(vals) // int.go
	case ir.PuntLog:
		l := sp.LogAt(p.Arg)
		var line string
		if l != nil {
			line, err = l.Render(p.Frame)
		}
		ok, missed := s.allowLog(now)
		if !ok {
			return
		}
		if missed > 0 {
			h.Logf("p4: %d log_msg lines suppressed (over %d per second)", missed, logRate)
		}
		switch {
		case l == nil:
			s.mu.Lock()
			s.st.Malformed++
			s.mu.Unlock()
			h.Logf("p4: log message with unknown index %d", p.Arg)
		case err != nil:
			s.mu.Lock()
			s.st.Malformed++
			s.mu.Unlock()
			h.Logf("p4: %v", err)
		default:
			h.Logf("p4 log_msg (%s, port %d): %s", l.Pos, p.InPort, line)
		}
	case ir.PuntPacketIn:
		ev := Event{Time: now, Kind: "packet_in", Port: p.InPort, Length: p.PktLen}
		frame := p.Frame
		if sp != nil && sp.PacketIn != nil {
			md, rest, err := sp.PacketIn.Decode(frame)
			if err != nil {
				s.mu.Lock()
				s.st.Malformed++
				s.mu.Unlock()
				return
			}
			ev.Fields, frame = md, rest
			ev.Length -= sp.PacketIn.Bytes
		}
		ev.Frame = hex.EncodeToString(frame)
		s.mu.Lock()
		s.st.PacketIns++
		s.add(ev)
		s.mu.Unlock()
	}
}

// --- views and actions ---
