package ktime

import (
	"testing"
	"time"
)

// TestRoundTrip: a deadline written for the fast path reads back as the
// wall-clock time it was made from; past deadlines are expired (1).
func TestRoundTrip(t *testing.T) {
	want := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	got := Wall(Base(), At(want))
	if d := got.Sub(want); d < -5*time.Millisecond || d > 5*time.Millisecond {
		t.Fatalf("Wall(At(%v)) = %v", want, got)
	}
	if At(time.Now().Add(-time.Second)) != 1 {
		t.Fatal("a past deadline is not 1")
	}
}

// TestClocks: both clocks run, the coarse one at most a tick behind.
func TestClocks(t *testing.T) {
	a, c := Now(), CoarseNow()
	if a == 0 || c == 0 {
		t.Fatalf("Now %d CoarseNow %d", a, c)
	}
	// The coarse clock is the fine one at the last tick: never ahead of it,
	// never a tick (at most 10 ms at HZ=100) behind a reading taken before.
	if c > Now() || a > c+uint64(10*time.Millisecond) {
		t.Fatalf("coarse clock %d far from %d", c, a)
	}
}
