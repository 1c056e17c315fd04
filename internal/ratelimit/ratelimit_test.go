package ratelimit

import (
	"testing"
	"time"
)

func TestBurstThenRate(t *testing.T) {
	now := time.Unix(1000, 0)
	b := New(func() time.Time { return now })
	for i := 0; i < 5; i++ {
		if w := b.Take("a", 10, 5); w != 0 {
			t.Fatalf("take %d of a burst of 5: wait %v", i+1, w)
		}
	}
	if w := b.Take("a", 10, 5); w != 100*time.Millisecond {
		t.Fatalf("sixth take: wait %v, want 100ms (10 a second)", w)
	}
	if w := b.Take("b", 10, 5); w != 0 {
		t.Fatalf("another key waits %v: buckets are per key", w)
	}
	now = now.Add(250 * time.Millisecond) // 2.5 tokens
	for i := 0; i < 2; i++ {
		if w := b.Take("a", 10, 5); w != 0 {
			t.Fatalf("after 250 ms, take %d: wait %v", i+1, w)
		}
	}
	if w := b.Take("a", 10, 5); w != 50*time.Millisecond {
		t.Fatalf("third take after 250 ms: wait %v, want 50ms", w)
	}
	now = now.Add(time.Hour)
	for i := 0; i < 5; i++ {
		if w := b.Take("a", 10, 5); w != 0 {
			t.Fatalf("after an hour, take %d: wait %v", i+1, w)
		}
	}
	if w := b.Take("a", 10, 5); w == 0 {
		t.Fatal("a bucket filled beyond its burst")
	}
}

func TestRateZeroNever(t *testing.T) {
	b := New(nil)
	if w := b.Take("a", 0, 5); w != Forever {
		t.Fatalf("rate 0: wait %v", w)
	}
}

func TestChangedLimitAppliesAtOnce(t *testing.T) {
	now := time.Unix(1000, 0)
	b := New(func() time.Time { return now })
	for i := 0; i < 3; i++ {
		if w := b.Take("a", 10, 5); w != 0 {
			t.Fatalf("take %d of a burst of 5: wait %v", i+1, w)
		}
	}
	// the quota is cut to a burst of 1 at 1 a second: the 2 tokens left
	// are capped to 1, and the next comes a second later
	if w := b.Take("a", 1, 1); w != 0 {
		t.Fatalf("first take at the new limit: wait %v", w)
	}
	if w := b.Take("a", 1, 1); w != time.Second {
		t.Fatalf("second take at 1 a second: wait %v, want 1s", w)
	}
	// refused takes cost nothing: the wait does not grow
	if w := b.Take("a", 1, 1); w != time.Second {
		t.Fatalf("third take: wait %v, want 1s (a refused take took a token)", w)
	}
}
