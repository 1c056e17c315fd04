// Package ratelimit keeps token buckets by key: how often each tenant may
// do something (send frames into the datapath through the API).
package ratelimit

import (
	"sync"
	"time"
)

// Buckets are token buckets by key, each as full as its burst at first.
// The rate and burst come with each Take, so a changed limit applies at
// once. Safe for concurrent use; a Take holds the lock for a few
// arithmetic operations.
type Buckets struct {
	mu  sync.Mutex
	m   map[string]*bucket
	now func() time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// New returns empty buckets reading the clock now (nil: time.Now).
func New(now func() time.Time) *Buckets {
	if now == nil {
		now = time.Now
	}
	return &Buckets{m: map[string]*bucket{}, now: now}
}

// Take takes a token from key's bucket, which fills at rate tokens a
// second up to burst. It returns 0 if it took one, else how long until
// one is there (forever: rate 0, or burst 0).
func (b *Buckets) Take(key string, rate, burst int64) time.Duration {
	if rate <= 0 || burst <= 0 {
		return Forever
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.m[key]
	if k == nil {
		k = &bucket{tokens: float64(burst), last: now}
		b.m[key] = k
	}
	k.tokens = min(float64(burst), k.tokens+now.Sub(k.last).Seconds()*float64(rate))
	k.last = now
	if k.tokens >= 1 {
		k.tokens--
		return 0
	}
	return time.Duration((1 - k.tokens) / float64(rate) * float64(time.Second))
}

// Forever is what Take returns when no token will ever come.
const Forever = time.Duration(1<<63 - 1)
