package ir

import (
	"math/rand/v2"
	"testing"
)

// fastMod is the data path's remainder (backend/selector.go) in Go.
func fastMod(h, n uint32) uint32 {
	return uint32(uint64(FastModMul(n)*h) * uint64(n) >> 32)
}

// TestFastModExact checks the selector's division-free remainder against
// h % n: every 16-bit hash over every group size up to 1024, and random
// hashes at the widest output width FastMod accepts for each group bound.
func TestFastModExact(t *testing.T) {
	for n := uint32(1); n <= MaxGroupSize; n++ {
		for h := uint32(0); h < 1<<16; h++ {
			if got := fastMod(h, n); got != h%n {
				t.Fatalf("16-bit hash %d over %d members: member %d, want %d", h, n, got, h%n)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, maxGroup := range []int{1, 2, 3, 4, 100, 128, 1000, MaxGroupSize} {
		ap := &ActionProfile{Selector: true, MaxGroupSize: maxGroup, OutputWidth: 1}
		for ap.OutputWidth < 64 && (&ActionProfile{Selector: true, MaxGroupSize: maxGroup, OutputWidth: ap.OutputWidth + 1}).FastMod() {
			ap.OutputWidth++
		}
		if !ap.FastMod() || ap.OutputWidth < 16 {
			t.Fatalf("max group %d: widest fast output width %d", maxGroup, ap.OutputWidth)
		}
		for range 200000 {
			n := uint32(1 + r.IntN(maxGroup))
			h := uint32(r.Uint64() & (1<<ap.OutputWidth - 1))
			if got := fastMod(h, n); got != h%n {
				t.Fatalf("%d-bit hash %d over %d members: member %d, want %d", ap.OutputWidth, h, n, got, h%n)
			}
		}
		// the extremes
		for _, n := range []uint32{1, 2, uint32(maxGroup)} {
			for _, h := range []uint32{0, 1, 1<<ap.OutputWidth - 1, 1<<ap.OutputWidth - 2} {
				if got := fastMod(h, n); got != h%n {
					t.Fatalf("%d-bit hash %d over %d members: member %d, want %d", ap.OutputWidth, h, n, got, h%n)
				}
			}
		}
	}
	if (&ActionProfile{Selector: true, MaxGroupSize: 128, OutputWidth: 32}).FastMod() {
		t.Error("a 32-bit hash takes the division-free remainder")
	}
}
