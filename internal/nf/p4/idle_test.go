package p4

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nftest"
)

// keepHitting sends frames from src through the rig for d, often enough that
// the data path refreshes the entries they hit (every 100 ms at most).
func keepHitting(r *nftest.Rig, frame []byte, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		r.Run("p1", frame)
	}
}

func idleEvents(t *testing.T, r *nftest.Rig) []Event {
	t.Helper()
	v, err := listEvents(r.Handle(), "idle_timeout")
	if err != nil {
		t.Fatal(err)
	}
	return v.([]Event)
}

// TestP4IdleTimeouts: a configured entry idle for its timeout is reported
// (once per period, and stays); learned entries idle for their rule's
// timeout are removed with those learned from the same digest, while a
// station that keeps sending keeps its entries.
func TestP4IdleTimeouts(t *testing.T) {
	cfg := strings.Replace(learnConfig, `"action": "NoAction"}`, `"action": "NoAction", "idle_timeout": "1s"}`, 1)
	c := learnCube(cfg)
	silent := "02:00:00:00:00:0c"
	c.Tables = map[string]map[string]json.RawMessage{"entries": {}}
	cfgEntry := &Entry{Table: "LearnIngress.smac", Match: map[string]string{"hdr.ethernet.srcAddr": silent}, Action: "NoAction", IdleTimeout: "1s"}
	c.Tables["entries"][cfgEntry.Key()] = nftest.Entry(cfgEntry)
	r := nftest.New(t, Type, c)
	read := punts(t, r)
	tick := func() { r.Ctl.(cube.Ticker).Tick(r.Handle(), r.Model, time.Now()) }
	a, b := "02:00:00:00:00:0a", "02:00:00:00:00:0b"

	// learn A (port 1) and B (port 2)
	r.Run("p1", udpFrom(b, a))
	r.Run("p2", udpFrom(a, b))
	for _, p := range read() {
		r.Ctl.(cube.PuntHandler).HandlePunt(r.Handle(), r.Model, p)
	}
	if res := r.Run("p1", udpFrom(b, a)); res.Port != 2 {
		t.Fatalf("A->B after learning: port %d, want 2", res.Port)
	}
	tick()
	if evs := idleEvents(t, r); len(evs) != 0 {
		t.Fatalf("idle events before any timeout: %+v", evs)
	}
	// A keeps sending for longer than the timeout; B and the configured
	// entry stay silent.
	keepHitting(r, udpFrom(b, a), 1300*time.Millisecond)
	tick()
	evs := idleEvents(t, r)
	if len(evs) != 2 {
		t.Fatalf("idle events %+v, want the configured entry and B's smac entry", evs)
	}
	var removed, reported bool
	for _, ev := range evs {
		switch ev.Entry.Match["hdr.ethernet.srcAddr"] {
		case b:
			removed = ev.Fields["removed"] == "true"
		case silent:
			reported = ev.Fields["removed"] == "" && ev.Entry.IdleTimeout == "1s"
		}
	}
	if !removed || !reported {
		t.Fatalf("idle events %+v: want B's learned entry removed, the configured one reported", evs)
	}
	v, _ := listLearned(r.Handle(), r.Model)
	for _, l := range v.([]LearnedEntry) {
		if l.Match["hdr.ethernet.srcAddr"] == b || l.Match["hdr.ethernet.dstAddr"] == b {
			t.Fatalf("B's entries still learned: %+v", v)
		}
	}
	if n := len(v.([]LearnedEntry)); n != 2 {
		t.Fatalf("learned %+v, want A's two entries", v)
	}
	// B forgotten: frames to it are flooded again, and B is reported anew
	if res := r.Run("p1", udpFrom(b, a)); res.Port == 2 {
		t.Fatalf("A->B still forwarded to port 2 after B's entries timed out")
	}
	// the configured entry stays, reported once per period
	tick()
	if evs := idleEvents(t, r); len(evs) != 2 {
		t.Fatalf("idle events after a second tick %+v, want no new one", evs)
	}
	iv, err := listIdle(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	var sawCfg bool
	for _, ie := range iv.([]IdleEntry) {
		if ie.Match["hdr.ethernet.srcAddr"] == silent {
			sawCfg = ie.Idle && !ie.Learned
		}
		if ie.Match["hdr.ethernet.srcAddr"] == a && ie.Idle {
			t.Fatalf("A's entry idle although A keeps sending: %+v", ie)
		}
	}
	if !sawCfg {
		t.Fatalf("idle view %+v: want the configured entry, idle", iv)
	}
	v, _ = slowPathStats(r.Handle(), r.Model)
	if st := v.(SlowPathStats); st.IdleTimeouts != 2 || st.Unlearned != 2 {
		t.Fatalf("stats %+v, want 2 idle timeouts and 2 entries unlearned", st)
	}
}

func TestP4IdleTimeoutValidation(t *testing.T) {
	c := learnCube(`{"program": "../../../examples/p4/l2learn.p4"}`)
	r := nftest.New(t, Type, c)
	for _, tc := range []struct {
		e    Entry
		want string
	}{
		{Entry{Table: "LearnIngress.dmac", Match: map[string]string{"hdr.ethernet.dstAddr": "02:00:00:00:00:01"}, Action: "flood", IdleTimeout: "10s"},
			"table LearnIngress.dmac does not time entries out: declare it with support_timeout = true"},
		{Entry{Table: "LearnIngress.smac", Match: map[string]string{"hdr.ethernet.srcAddr": "02:00:00:00:00:01"}, Action: "NoAction", IdleTimeout: "10"},
			`"10": want a duration such as 30s or 5m`},
		{Entry{Table: "LearnIngress.smac", Match: map[string]string{"hdr.ethernet.srcAddr": "02:00:00:00:00:01"}, Action: "NoAction", IdleTimeout: "500ms"},
			"500ms: at least 1s"},
	} {
		err := tc.e.Validate(r.Model)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "idle_timeout") {
			t.Errorf("%+v: error %v, want idle_timeout: %s", tc.e, err, tc.want)
		}
	}
	bad := strings.Replace(learnConfig, `"action": "forward",`, `"action": "forward", "idle_timeout": "1m",`, 1)
	s := &Settings{}
	if err := json.Unmarshal(inline(bad), s); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(c); err == nil || !strings.Contains(err.Error(), "learn[1].idle_timeout") {
		t.Fatalf("learning rule with idle_timeout on a table without support_timeout: %v", err)
	}
}
