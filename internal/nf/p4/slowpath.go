package p4

// The slow path of a p4 cube: digests and packet-ins from the program,
// learning rules that turn digests into table entries, log_msg lines, and
// packet-out through the CPU port.

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	p4c "github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/rt"
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

// LearnRule turns each digest of one type into a table entry, as a simple
// P4Runtime learning controller does. In Match and Params, "$field" is the
// value of the digest's field (learn_t.srcAddr: "$srcAddr").
type LearnRule struct {
	Digest   string            `json:"digest" doc:"a digest the program sends (404 otherwise)"`
	Table    string            `json:"table" doc:"a table of the program (404 otherwise)"`
	Match    map[string]string `json:"match" format:"p4-learn-match" doc:"key field = match, or $field of the digest"`
	Action   string            `json:"action" doc:"an action of the table (404 otherwise)"`
	Params   map[string]string `json:"params,omitempty" format:"p4-learn-value" doc:"parameter = value, or $field of the digest"`
	Priority uint32            `json:"priority,omitempty"`
	// IdleTimeout removes a learned entry no packet has hit for that long
	// ("5m"; the table needs support_timeout = true).
	IdleTimeout string `json:"idle_timeout,omitempty" format:"p4-duration"`
}

// entry substitutes the digest's values into the rule.
func (r *LearnRule) entry(vals map[string]string) (*Entry, error) {
	sub := func(m map[string]string) (map[string]string, error) {
		out := map[string]string{}
		for k, v := range m {
			if strings.HasPrefix(v, "$") {
				x, ok := vals[v[1:]]
				if !ok {
					return nil, fmt.Errorf("digest %s has no field %q", r.Digest, v[1:])
				}
				v = x
			}
			out[k] = v
		}
		return out, nil
	}
	match, err := sub(r.Match)
	if err != nil {
		return nil, err
	}
	params, err := sub(r.Params)
	if err != nil {
		return nil, err
	}
	return &Entry{Table: r.Table, Match: match, Action: r.Action, Params: params, Priority: r.Priority, IdleTimeout: r.IdleTimeout}, nil
}

// validateSlowPath checks the settings that concern the slow path against
// the compiled program.
func (s *Settings) validateSlowPath(info *p4info.P4Info) error {
	if s.CPUPort != 0 && (s.CPUPort < 64 || s.CPUPort > 510) {
		return cube.Errorf("cpu_port", "%d: the CPU port must be in 64..510 (ports 0..63 are the cube's, 511 drops)", s.CPUPort)
	}
	if s.LearnMax < 0 {
		return cube.Errorf("learn_max", "must not be negative")
	}
	for i, r := range s.Learn {
		field := fmt.Sprintf("learn[%d]", i)
		if err := checkForms(field+".match", r.Match, orField(p4info.MatchSyntax)); err != nil {
			return err
		}
		if err := checkForms(field+".params", r.Params, orField(p4info.ValueSyntax)); err != nil {
			return err
		}
		if _, err := parseIdleTimeout(field+".idle_timeout", r.IdleTimeout, nil); err != nil {
			return err
		}
	}
	sp := info.Edgenf.SlowPath
	for i, r := range s.Learn {
		field := fmt.Sprintf("learn[%d]", i)
		d := sp.Digest(r.Digest)
		if d == nil {
			return cube.NotFound(field+".digest", "the program sends no digest %q (digests: %s)", r.Digest, digestNames(sp))
		}
		t := info.Edgenf.Table(r.Table)
		if t == nil {
			return cube.NotFound(field+".table", "the program has no table %q (tables: %s)", r.Table, tableNames(info.Edgenf))
		}
		// a sample digest: every field 0
		vals := map[string]string{}
		for _, f := range d.Fields {
			vals[f.Name] = "0"
		}
		e, err := r.entry(vals)
		if err != nil {
			return cube.NotFound(field, "%v", err)
		}
		if err := namesIn(t, e.Action, e.Match, e.Params); err != nil {
			return cube.Within(field, err)
		}
		if _, err := t.EncodeEntry(e.Matches(), e.Action, e.Args(), e.Priority); err != nil {
			return cube.Conflict(field, "%v", err)
		}
		if _, err := parseIdleTimeout(field+".idle_timeout", r.IdleTimeout, t); err != nil {
			return err
		}
	}
	return nil
}

func digestNames(sp *p4info.SlowPathLayout) string {
	if sp == nil || len(sp.Digests) == 0 {
		return "none"
	}
	var n []string
	for _, d := range sp.Digests {
		n = append(n, d.Name)
	}
	return strings.Join(n, ", ")
}

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

// learn applies the learning rules of digest d.
func (ctl controller) learn(h cube.Handle, c *cube.Cube, info *p4info.P4Info, d *p4info.DigestLayout, vals map[string]string, now time.Time) {
	set, err := settingsOf(c)
	if err != nil || len(set.Learn) == 0 {
		return
	}
	max := set.LearnMax
	if max == 0 {
		max = DefaultLearnMax
	}
	s := ctl.sp
	var prog interface {
		AddEntry(string, []p4info.Match, string, []p4info.Arg, uint32) error
	}
	for _, rule := range set.Learn {
		if info.Edgenf.SlowPath.Digest(rule.Digest) != d {
			continue
		}
		e, err := rule.entry(vals)
		if err == nil {
			err = e.Validate(c)
		}
		if err == nil {
			canonical(info.Edgenf.Table(e.Table), e)
		}
		if err != nil {
			s.mu.Lock()
			s.st.LearnFailed++
			s.mu.Unlock()
			h.Logf("p4: learning from %s: %v", d.Name, err)
			continue
		}
		key := e.Key()
		s.mu.Lock()
		old, have := s.learned[key]
		full := !have && len(s.learned) >= max
		if full {
			s.st.LearnFull++
		}
		s.mu.Unlock()
		if full || (have && old.Action == e.Action && equalMaps(old.Params, e.Params)) {
			continue
		}
		if configured(c, info.Edgenf.Table(e.Table), e) {
			continue // an entry of the configuration wins
		}
		if prog == nil {
			p, err := runtimeOf(h, c)
			if err != nil {
				h.Logf("p4: learning: %v", err)
				return
			}
			prog = p
		}
		if err := prog.AddEntry(e.Table, e.Matches(), e.Action, e.Args(), e.Priority); err != nil {
			s.mu.Lock()
			s.st.LearnFailed++
			s.mu.Unlock()
			h.Logf("p4: learning %s: %v", key, err)
			continue
		}
		s.mu.Lock()
		s.learned[key] = &LearnedEntry{Entry: *e, Digest: d.Name, Learned: now, From: d.Name + " " + kvString(vals)}
		s.st.Learned++
		s.mu.Unlock()
	}
}

// kvString is m as sorted k=v pairs.
func kvString(m map[string]string) string {
	var b strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", k, m[k])
	}
	return b.String()
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// configured reports whether the cube's configuration has an entry with
// the same match as e (compared as encoded keys: 0x0a and 10 are one key).
func configured(c *cube.Cube, t *p4info.TableLayout, e *Entry) bool {
	if t == nil {
		return false
	}
	enc, err := t.EncodeEntry(e.Matches(), e.Action, e.Args(), e.Priority)
	if err != nil {
		return false
	}
	entries, err := entriesTable.Entries(c)
	if err != nil {
		return false
	}
	for _, v := range entries {
		ce := v.(*Entry)
		if ce.Table != t.Name || ce.Priority != e.Priority {
			continue
		}
		cenc, err := t.EncodeEntry(ce.Matches(), ce.Action, ce.Args(), ce.Priority)
		if err == nil && bytes.Equal(cenc.Key, enc.Key) && bytes.Equal(cenc.MatchKey, enc.MatchKey) {
			return true
		}
	}
	return false
}

// canonical rewrites the exact match values and the parameters of e in one
// form per width (a MAC for 48 bits, decimal up to 64 bits, hex above), so
// that an entry has one key however its values were written.
func canonical(t *p4info.TableLayout, e *Entry) {
	if t == nil {
		return
	}
	for _, k := range t.Keys {
		v, ok := e.Match[k.Name]
		if !ok || k.MatchKind != "exact" {
			continue
		}
		if x, err := p4info.ParseValue(v, k.Width); err == nil {
			e.Match[k.Name] = p4info.FormatField(ir.DataField{Width: k.Width}, x.Bytes())
		}
	}
	if a := t.Action(e.Action); a != nil {
		for _, p := range a.Params {
			if v, ok := e.Params[p.Name]; ok {
				if x, err := p4info.ParseValue(v, p.Width); err == nil {
					e.Params[p.Name] = p4info.FormatField(ir.DataField{Width: p.Width}, x.Bytes())
				}
			}
		}
	}
}

// restoreLearned lists again, after a daemon restart, the entries learning
// rules installed: those of the rules' (exact-match) tables with the rules'
// actions that the configuration does not have.
func (ctl controller) restoreLearned(c *cube.Cube, info *p4info.P4Info, prog *rt.Program) {
	set, err := settingsOf(c)
	if err != nil || len(set.Learn) == 0 {
		return
	}
	s := ctl.sp
	now := time.Now()
	for _, rule := range set.Learn {
		t := info.Edgenf.Table(rule.Table)
		if t == nil || t.Kind != "hash" {
			continue
		}
		ra := t.Action(rule.Action)
		decoded, err := prog.Entries(t.Name)
		if err != nil || ra == nil {
			continue
		}
		for _, d := range decoded {
			if d.Action.ActionID != ra.ID {
				continue
			}
			e := &Entry{Table: t.Name, Match: map[string]string{}, Action: ra.Name, Params: map[string]string{}, IdleTimeout: rule.IdleTimeout}
			for _, fm := range d.Matches {
				for _, k := range t.Keys {
					if k.ID == fm.FieldID {
						e.Match[k.Name] = p4info.FormatField(ir.DataField{Width: k.Width}, fm.Value)
					}
				}
			}
			for _, p := range ra.Params {
				e.Params[p.Name] = p4info.FormatField(ir.DataField{Width: p.Width}, d.Action.Params[p.ID])
			}
			if len(e.Params) == 0 {
				e.Params = nil
			}
			if configured(c, t, e) {
				continue
			}
			s.mu.Lock()
			if _, ok := s.learned[e.Key()]; !ok {
				s.learned[e.Key()] = &LearnedEntry{Entry: *e, Digest: rule.Digest, Learned: now}
			}
			s.mu.Unlock()
		}
	}
}

// syncLearned writes the learned entries again (after a program swap) and
// forgets those the program no longer accepts.
func (ctl controller) syncLearned(h cube.Handle, c *cube.Cube) {
	s := ctl.sp
	if s == nil {
		return
	}
	r, err := programOf(c)
	if err != nil {
		return
	}
	s.mu.Lock()
	same := s.synced == r // the same program keeps its maps: nothing to write
	first := s.synced == nil
	s.synced = r
	learned := make([]*LearnedEntry, 0, len(s.learned))
	for _, e := range s.learned {
		learned = append(learned, e)
	}
	s.mu.Unlock()
	if first && len(learned) == 0 {
		// a new controller (daemon restart): the pinned maps may hold
		// entries learned before
		if prog, err := runtimeOf(h, c); err == nil {
			ctl.restoreLearned(c, r.Info, prog)
		}
		return
	}
	if same || len(learned) == 0 {
		return
	}
	prog, err := runtimeOf(h, c)
	if err != nil {
		return
	}
	for _, e := range learned {
		if err := prog.AddEntry(e.Table, e.Matches(), e.Action, e.Args(), e.Priority); err == nil {
			continue
		}
		s.mu.Lock()
		delete(s.learned, e.Key())
		s.mu.Unlock()
	}
}

// --- views and actions ---

func listDigests(h cube.Handle, c *cube.Cube) (any, error) { return listEvents(h, "digest") }

func listPacketIns(h cube.Handle, c *cube.Cube) (any, error) { return listEvents(h, "packet_in") }

func listEvents(h cube.Handle, kind string) (any, error) {
	s, err := stateOf(h)
	if err != nil {
		return nil, err
	}
	evs, _, _, _ := s.since(0, kind, eventBuffer)
	return evs, nil
}

func listLearned(h cube.Handle, c *cube.Cube) (any, error) {
	s, err := stateOf(h)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	out := make([]LearnedEntry, 0, len(s.learned))
	for _, e := range s.learned {
		out = append(out, *e)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

func slowPathStats(h cube.Handle, c *cube.Cube) (any, error) {
	s, err := stateOf(h)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	st := s.st
	st.LearnedEntries = len(s.learned)
	st.BufferedEvents = len(s.events)
	st.NextSeq = s.next
	s.mu.Unlock()
	r, err := programOf(c)
	if err != nil {
		return nil, err
	}
	if sp := r.Info.Edgenf.SlowPath; sp != nil && sp.StatsMap != "" {
		m, err := h.Map(sp.StatsMap)
		if err != nil {
			return nil, err
		}
		var k [ir.SPStats]uint64
		for i := range k {
			var per []uint64
			if err := m.Lookup(uint32(i), &per); err != nil {
				return nil, err
			}
			for _, v := range per {
				k[i] += v
			}
		}
		st.DigestsSent, st.DigestsLost = k[ir.SPDigestSent], k[ir.SPDigestLost]
		st.LogsSent, st.LogsLost = k[ir.SPLogSent], k[ir.SPLogLost]
	}
	return st, nil
}

// PollArgs are the arguments of the poll action: events after seq After
// (0: from the oldest buffered), of Kind ("digest", "packet_in" or "" for
// both), waiting up to TimeoutMs (at most 60000) for the first one.
type PollArgs struct {
	After     uint64 `json:"after"`
	Kind      string `json:"kind,omitempty" enum:"digest|packet_in|idle_timeout"`
	TimeoutMs int    `json:"timeout_ms,omitempty" minimum:"0" maximum:"60000"`
	Max       int    `json:"max,omitempty" doc:"at most this many events (1..1024; else 1024)"`
}

// PollResult is the answer of a poll: the events, the seq to poll after
// next time, and how many events after After were overwritten unread.
type PollResult struct {
	Events []Event `json:"events"`
	Next   uint64  `json:"next"`
	Missed uint64  `json:"missed"`
}

type poll struct {
	s       *slowState
	a       PollArgs
	timeout time.Duration
}

func (p poll) Wait(ctx context.Context) (any, error) {
	t := time.NewTimer(p.timeout)
	defer t.Stop()
	for {
		evs, missed, next, ch := p.s.since(p.a.After, p.a.Kind, p.a.Max)
		if len(evs) > 0 || missed > 0 {
			return PollResult{Events: evs, Next: next, Missed: missed}, nil
		}
		p.a.After = next
		select {
		case <-ch:
		case <-t.C:
			return PollResult{Events: []Event{}, Next: next}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func pollAction(h cube.Handle, c *cube.Cube, args any) (any, error) {
	a, _ := args.(*PollArgs)
	if a == nil {
		a = &PollArgs{}
	}
	switch a.Kind {
	case "", "digest", "packet_in", "idle_timeout":
	default:
		return nil, cube.Errorf("kind", "%q: want digest, packet_in, idle_timeout or nothing (all)", a.Kind)
	}
	if a.TimeoutMs < 0 || time.Duration(a.TimeoutMs)*time.Millisecond > maxPollWait {
		return nil, cube.Errorf("timeout_ms", "%d: want 0..%d", a.TimeoutMs, maxPollWait.Milliseconds())
	}
	if a.Max <= 0 || a.Max > eventBuffer {
		a.Max = eventBuffer
	}
	s, err := stateOf(h)
	if err != nil {
		return nil, err
	}
	return poll{s: s, a: *a, timeout: time.Duration(a.TimeoutMs) * time.Millisecond}, nil
}

// PacketOutArgs are the arguments of the packet_out action: the frame (hex,
// an Ethernet frame) and the values of the program's packet_out header,
// which is put in front of the frame; the result enters the program on the
// CPU port, as from a P4Runtime controller.
type PacketOutArgs struct {
	Frame    string            `json:"frame" pattern:"^(0x)?([0-9A-Fa-f]{2} ?){14,}$" doc:"an Ethernet frame in hex, at least 14 bytes; with the program's packet_out header at most what the slow path injects (409 otherwise)"`
	Metadata map[string]string `json:"metadata,omitempty" format:"p4-value" doc:"field of the program's packet_out header (404 otherwise) = value"`
}

func packetOut(h cube.Handle, c *cube.Cube, args any) (any, error) {
	a, _ := args.(*PacketOutArgs)
	if a == nil || a.Frame == "" {
		return nil, cube.Errorf("frame", "required: the frame in hex")
	}
	frame, err := hex.DecodeString(strings.ReplaceAll(strings.TrimPrefix(a.Frame, "0x"), " ", ""))
	if err != nil {
		return nil, cube.Errorf("frame", "not hex: %v", err)
	}
	if len(frame) < 14 || len(frame) > datapath.MaxInjectFrame {
		return nil, cube.Errorf("frame", "%d bytes: want an Ethernet frame of 14..%d bytes", len(frame), datapath.MaxInjectFrame)
	}
	if err := checkForms("metadata", a.Metadata, p4info.ValueSyntax); err != nil {
		return nil, err
	}
	r, err := programOf(c)
	if err != nil {
		return nil, err
	}
	var hdr []byte
	if sp := r.Info.Edgenf.SlowPath; sp != nil && sp.PacketOut != nil {
		for _, k := range sortedKeys(a.Metadata) {
			if sp.PacketOut.Field(k) == nil {
				return nil, cube.NotFound("metadata."+k, "the program's packet_out header has no field %q", k)
			}
		}
		if hdr, err = sp.PacketOut.Encode(a.Metadata); err != nil {
			return nil, cube.Conflict("metadata", "%v", err)
		}
	} else if len(a.Metadata) > 0 {
		return nil, cube.NotFound("metadata", "the program has no @controller_header(\"packet_out\") header")
	}
	if n := len(hdr) + len(frame); n > datapath.MaxInjectFrame {
		return nil, cube.Conflict("frame", "%d bytes with the program's packet_out header: at most %d", n, datapath.MaxInjectFrame)
	}
	s, err := stateOf(h)
	if err != nil {
		return nil, err
	}
	port := r.Info.Edgenf.CPUPort
	if err := h.Inject(port, append(hdr, frame...)); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.st.PacketOuts++
	s.mu.Unlock()
	return map[string]any{"injected": len(hdr) + len(frame), "cpu_port": port}, nil
}
