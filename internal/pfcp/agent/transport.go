package agent

import (
	"net/netip"
	"sync"
	"time"

	"github.com/edgenf/edgenf/internal/pfcp"
)

// The reliable-delivery half of PFCP (TS 29.244 clause 6.4): requests are
// answered once and their retransmissions from a cache of responses; the
// UPF's own requests are retransmitted every T1 up to N1 times.

// responseCache remembers the responses sent, by peer and sequence number,
// for as long as the peer may retransmit the request.
type responseCache struct {
	mu    sync.Mutex
	m     map[cacheKey][]byte
	order []cacheEntry // oldest first
}

type cacheKey struct {
	peer netip.AddrPort
	seq  uint32
}

type cacheEntry struct {
	key cacheKey
	at  time.Time
}

const (
	// cacheTTL outlasts any sensible retransmission schedule of a peer
	// (3 retransmissions 3 s apart by default).
	cacheTTL = 60 * time.Second
	cacheMax = 1 << 18
)

func newResponseCache() *responseCache { return &responseCache{m: map[cacheKey][]byte{}} }

// get returns the response to (peer, seq): nil with ok while the request
// is still being processed.
func (c *responseCache) get(peer netip.AddrPort, seq uint32) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[cacheKey{peer, seq}]
	return b, ok
}

func (c *responseCache) put(peer netip.AddrPort, seq uint32, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{peer, seq}
	if _, ok := c.m[k]; !ok {
		c.order = append(c.order, cacheEntry{k, time.Now()})
	}
	c.m[k] = b
	for len(c.order) > cacheMax {
		delete(c.m, c.order[0].key)
		c.order = c.order[1:]
	}
}

func (c *responseCache) expire(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for n < len(c.order) && now.Sub(c.order[n].at) > cacheTTL {
		delete(c.m, c.order[n].key)
		n++
	}
	c.order = c.order[n:]
}

// request is a request of the UPF's awaiting its response.
type request struct {
	to    netip.AddrPort
	b     []byte
	sent  time.Time
	tries uint32
	// done gets the response, or nil after the last retransmission.
	done func(resp *pfcp.Message)
}

// ask sends a request of the UPF's and retransmits it until answered.
func (a *Agent) ask(to netip.AddrPort, m *pfcp.Message, done func(*pfcp.Message)) {
	a.mu.Lock()
	a.seq = (a.seq + 1) & 0xffffff
	m.Seq = a.seq
	a.mu.Unlock()
	b := a.sendMsg(to, m)
	a.mu.Lock()
	a.pending[m.Seq] = &request{to: to, b: b, sent: time.Now(), tries: 1, done: done}
	a.mu.Unlock()
}

// response matches a response with the request it answers.
func (a *Agent) response(from netip.AddrPort, m *pfcp.Message) {
	a.mu.Lock()
	r := a.pending[m.Seq]
	if r == nil || r.to != from {
		a.mu.Unlock()
		a.countDiscard() // unexpected: silently discarded (7.6.5)
		return
	}
	delete(a.pending, m.Seq)
	a.mu.Unlock()
	if err := pfcp.Check(m); err != nil {
		a.logf("PFCP %s from %s: %v", m.Type, from, err)
	}
	if r.done != nil {
		r.done(m)
	}
}

// timers retransmits, sends heartbeats and expires the cache.
func (a *Agent) timers() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	lastExpire := time.Now()
	for {
		select {
		case <-a.done:
			return
		case now := <-t.C:
			a.retransmit(now)
			a.heartbeats(now)
			if now.Sub(lastExpire) > time.Second {
				a.cache.expire(now)
				lastExpire = now
			}
		}
	}
}

func (a *Agent) retransmit(now time.Time) {
	a.mu.Lock()
	t1 := time.Duration(a.cfg.Settings.PFCP.T1Ms) * time.Millisecond
	n1 := a.cfg.Settings.PFCP.N1
	var resend []*request
	var failed []*request
	for seq, r := range a.pending {
		if now.Sub(r.sent) < t1 {
			continue
		}
		if r.tries > n1 {
			delete(a.pending, seq)
			a.stats.Timeouts++
			failed = append(failed, r)
			continue
		}
		r.tries++
		r.sent = now
		resend = append(resend, r)
	}
	a.mu.Unlock()
	for _, r := range resend {
		a.send(r.to, r.b)
	}
	for _, r := range failed {
		if r.done != nil {
			r.done(nil)
		}
	}
}
