package p4

// Learning: rules that turn the program's digests into table entries, as a
// simple P4Runtime learning controller does, kept across restarts.

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
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
func (ctl controller) restoreLearned(c *cube.Cube, info *p4info.P4Info, prog *tableruntime.Program) {
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
