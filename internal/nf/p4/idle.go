package p4

// Idle timeouts of table entries, for tables with support_timeout = true
// (the data path keeps each entry's last hit, internal/p4/tableruntime/idle.go). An
// entry with an idle_timeout that no packet has hit for that long is
// reported as an "idle_timeout" event — again after every further
// idle_timeout while it stays idle — like P4Runtime's
// IdleTimeoutNotification: the entry stays until the control plane deletes
// it. Entries learned by a rule with idle_timeout are removed instead.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// Idle timeouts are checked once a second: shorter ones could not be kept.
const minIdleTimeout = time.Second

// parseIdleTimeout reads the idle_timeout ("30s", "5m"; "" none) of field
// for a table, which must have support_timeout = true (t nil: only the
// duration is checked).
func parseIdleTimeout(field, s string, t *p4info.TableLayout) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, cube.Errorf(field, "%q: want a duration such as 30s or 5m", s)
	}
	if d < minIdleTimeout {
		return 0, cube.Unprocessable(field, "%s: at least %s (idle entries are looked for once a second)", s, minIdleTimeout)
	}
	if t != nil && t.IdleOffset == 0 {
		return 0, cube.Conflict(field, "table %s does not time entries out: declare it with support_timeout = true", t.Name)
	}
	return d, nil
}

// IdleEntry is an entry with an idle timeout and how long it has not been hit.
type IdleEntry struct {
	Entry
	Learned bool   `json:"learned,omitempty"`
	IdleFor string `json:"idle_for"`
	Idle    bool   `json:"idle"` // idle for idle_timeout or longer
}

// idleCandidate is an entry whose timeout is watched.
type idleCandidate struct {
	e       *Entry
	timeout time.Duration
	learned bool
	from    string // learned: the digest it came from
}

// watchIdle keeps the set of configured entries with a timeout up to date
// as entries are written (e) or deleted (nil), so that a tick need not
// decode the whole configuration.
func (s *slowState) watchIdle(key string, e *Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.idleDue, key) // a new timeout is looked at on the next tick
	if e == nil || e.IdleTimeout == "" {
		delete(s.idleEntries, key)
		return
	}
	s.idleEntries[key] = e
}

// resetIdle rebuilds the set from the whole configuration (Sync).
func (s *slowState) resetIdle(c *cube.Cube) {
	entries, _ := entriesTable.Entries(c)
	s.mu.Lock()
	s.idleEntries = map[string]*Entry{}
	s.mu.Unlock()
	for _, v := range entries {
		e := v.(*Entry)
		s.watchIdle(e.Key(), e)
	}
}

// idleCandidates lists the configured and learned entries with a timeout.
func (ctl controller) idleCandidates() []idleCandidate {
	var out []idleCandidate
	s := ctl.sp
	s.mu.Lock()
	for _, e := range s.idleEntries {
		if d, err := time.ParseDuration(e.IdleTimeout); err == nil {
			out = append(out, idleCandidate{e: e, timeout: d})
		}
	}
	for _, l := range s.learned {
		if d, err := time.ParseDuration(l.IdleTimeout); err == nil && l.IdleTimeout != "" {
			e := l.Entry
			out = append(out, idleCandidate{e: &e, timeout: d, learned: true, from: l.From})
		}
	}
	s.mu.Unlock()
	return out
}

// Tick reports (or, learned, removes) the entries idle for their timeout.
// An entry is looked at only when it can be due: an entry hit d ago cannot
// time out before timeout - d from now, and a reported one is reported
// again a timeout later if still idle. So a large table with long
// timeouts costs a few kernel reads a second, not one per entry.
func (ctl controller) Tick(h cube.Handle, c *cube.Cube, now time.Time) {
	s := ctl.sp
	if s == nil {
		return
	}
	cands := ctl.idleCandidates()
	var prog *tableruntime.Program
	for _, ic := range cands {
		key := ic.e.Key()
		s.mu.Lock()
		due, ok := s.idleDue[key]
		s.mu.Unlock()
		if ok && now.Before(due) {
			continue
		}
		if prog == nil {
			var err error
			if prog, err = runtimeOf(h, c); err != nil {
				return
			}
		}
		idle, err := prog.Idle(ic.e.Table, ic.e.Matches(), ic.e.Priority)
		if err != nil {
			continue
		}
		if idle < ic.timeout {
			s.mu.Lock()
			s.idleDue[key] = now.Add(ic.timeout - idle)
			s.mu.Unlock()
			continue
		}
		if ic.learned {
			ctl.unlearn(h, prog, ic, idle, now)
			continue
		}
		s.mu.Lock()
		s.idleDue[key] = now.Add(ic.timeout)
		s.st.IdleTimeouts++
		s.add(idleEvent(ic.e, idle, false, now))
		s.mu.Unlock()
	}
}

// unlearn removes a learned entry that has been idle for its timeout, with
// the entries learned from the same digest (a learning switch forgets a
// station's port when the station falls silent, not when nobody writes to
// it).
func (ctl controller) unlearn(h cube.Handle, prog *tableruntime.Program, ic idleCandidate, idle time.Duration, now time.Time) {
	s := ctl.sp
	s.mu.Lock()
	gone := []*Entry{ic.e}
	for k, l := range s.learned {
		if ic.from != "" && l.From == ic.from && k != ic.e.Key() {
			e := l.Entry
			gone = append(gone, &e)
		}
	}
	s.mu.Unlock()
	for i, e := range gone {
		if err := prog.DeleteEntry(e.Table, e.Matches(), e.Priority); err != nil {
			h.Logf("p4: removing idle learned entry %s: %v", e.Key(), err)
			continue
		}
		s.mu.Lock()
		delete(s.learned, e.Key())
		delete(s.idleDue, e.Key())
		s.st.Unlearned++
		if i == 0 {
			s.st.IdleTimeouts++
			s.add(idleEvent(e, idle, true, now))
		}
		s.mu.Unlock()
	}
}

func idleEvent(e *Entry, idle time.Duration, removed bool, now time.Time) Event {
	f := map[string]string{"table": e.Table, "entry": e.Key(), "idle_for": idle.Truncate(time.Second).String()}
	if removed {
		f["removed"] = "true"
	}
	entry := *e
	return Event{Time: now, Kind: "idle_timeout", Fields: f, Entry: &entry}
}

// listIdle is the idle view: every entry with an idle timeout.
func listIdle(h cube.Handle, c *cube.Cube) (any, error) {
	ctl, ok := h.Controller().(controller)
	if !ok || ctl.sp == nil {
		return nil, fmt.Errorf("the cube has no p4 controller")
	}
	cands := ctl.idleCandidates()
	out := make([]IdleEntry, 0, len(cands))
	if len(cands) == 0 {
		return out, nil
	}
	prog, err := runtimeOf(h, c)
	if err != nil {
		return nil, err
	}
	for _, ic := range cands {
		idle, err := prog.Idle(ic.e.Table, ic.e.Matches(), ic.e.Priority)
		if err != nil {
			return nil, fmt.Errorf("entry %s: %w", ic.e.Key(), err)
		}
		out = append(out, IdleEntry{Entry: *ic.e, Learned: ic.learned, IdleFor: idle.Truncate(time.Second).String(), Idle: idle >= ic.timeout})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// SinceHitArgs names entries (table, match, priority) of tables with
// support_timeout.
type SinceHitArgs struct {
	Entries []Entry `json:"entries"`
}

// SinceHit is how long ago a packet last hit an entry.
type SinceHit struct {
	Entry   string `json:"entry"` // its key
	IdleNs  int64  `json:"idle_ns"`
	IdleFor string `json:"idle_for"`
}

// sinceHit reads the last hit of each named entry (P4Runtime's
// time_since_last_hit): one pass over the kernel maps for all of them.
func sinceHit(h cube.Handle, c *cube.Cube, args any) (any, error) {
	a, _ := args.(*SinceHitArgs)
	if a == nil {
		return []SinceHit{}, nil
	}
	return SinceHits(h, c, a.Entries)
}

// SinceHits says how long ago a packet last hit each entry (the
// time_since_hit action, typed: engine.Call).
func SinceHits(h cube.Handle, c *cube.Cube, entries []Entry) ([]SinceHit, error) {
	prog, err := runtimeOf(h, c)
	if err != nil {
		return nil, err
	}
	out := make([]SinceHit, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		field := fmt.Sprintf("entries[%d]", i)
		if err := checkForms(field+".match", e.Match, p4info.MatchSyntax); err != nil {
			return nil, err
		}
		if prog.Model.Table(e.Table) == nil {
			return nil, cube.NotFound(field+".table", "the program has no table %q", e.Table)
		}
		idle, err := prog.Idle(e.Table, e.Matches(), e.Priority)
		if err != nil {
			if strings.Contains(err.Error(), "no such entry") {
				return nil, cube.NotFound(field, "%s: %v", e.Key(), err)
			}
			return nil, cube.Conflict(field, "%s: %v", e.Key(), err)
		}
		out = append(out, SinceHit{Entry: e.Key(), IdleNs: int64(idle), IdleFor: idle.Truncate(time.Millisecond).String()})
	}
	return out, nil
}
