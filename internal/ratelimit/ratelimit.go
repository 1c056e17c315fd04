// Package ratelimit keeps token buckets by key: how often each tenant may
// do something (send frames into the datapath through the API).
package ratelimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Buckets are token buckets by key (golang.org/x/time/rate limiters), each
// as full as its burst at first. The rate and burst come with each Take,
// so a changed limit applies at once. Safe for concurrent use.
type Buckets struct {
	mu  sync.Mutex
	m   map[string]*rate.Limiter
	now func() time.Time
}

// New returns empty buckets reading the clock now (nil: time.Now).
func New(now func() time.Time) *Buckets {
	if now == nil {
		now = time.Now
	}
	return &Buckets{m: map[string]*rate.Limiter{}, now: now}
}

// Take takes a token from key's bucket, which fills at perSecond tokens a
// second up to burst. It returns 0 if it took one, else how long until
// one is there (forever: rate 0, or burst 0).
func (b *Buckets) Take(key string, perSecond, burst int64) time.Duration {
	if perSecond <= 0 || burst <= 0 {
		return Forever
	}
	now := b.now()
	b.mu.Lock()
	l := b.m[key]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(perSecond), int(burst))
		b.m[key] = l
	}
	b.mu.Unlock()
	// a quota changed since the last take: the tokens gathered until now
	// count at the old rate, the cap is the new burst
	if l.Limit() != rate.Limit(perSecond) {
		l.SetLimitAt(now, rate.Limit(perSecond))
	}
	if l.Burst() != int(burst) {
		l.SetBurstAt(now, int(burst))
	}
	r := l.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	if wait > 0 {
		// refused: the token is not taken (a refused call costs nothing)
		r.CancelAt(now)
	}
	return wait
}

// Forever is what Take returns when no token will ever come.
const Forever = time.Duration(1<<63 - 1)
