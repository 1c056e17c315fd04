// Package ktime reads the clocks the eBPF fast path stamps its maps with,
// and converts between them and wall-clock time: bpf_ktime_get_ns() is
// CLOCK_MONOTONIC, bpf_ktime_get_coarse_ns() CLOCK_MONOTONIC_COARSE (the
// same clock at a tick's resolution). Every controller that compares a
// kernel timestamp with now, or writes a deadline the fast path checks,
// goes through here.
package ktime

import (
	"time"

	"golang.org/x/sys/unix"
)

func read(clock int32) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0 // cannot happen on Linux for these clocks
	}
	return uint64(ts.Nano())
}

// Now is bpf_ktime_get_ns() now, in nanoseconds.
func Now() uint64 { return read(unix.CLOCK_MONOTONIC) }

// CoarseNow is bpf_ktime_get_coarse_ns() now: the fast path reads it where
// a tick's resolution is plenty (aging), as it costs no clock read there.
func CoarseNow() uint64 { return read(unix.CLOCK_MONOTONIC_COARSE) }

// At is the bpf_ktime_get_ns() value of wall-clock time t: a deadline for
// the fast path. A time already past gives 1, which every check treats as
// expired (0 means "no deadline" in the maps that use it).
func At(t time.Time) uint64 {
	now := Now()
	d := time.Until(t)
	if d <= 0 {
		return 1
	}
	return now + uint64(d)
}

// Base is the wall-clock time at which bpf_ktime_get_ns() was 0, read now:
// read it once to convert several kernel timestamps consistently.
func Base() time.Time { return time.Now().Add(-time.Duration(Now())) }

// Wall converts a bpf_ktime_get_ns() value back into wall-clock time,
// from base (Base), in UTC at millisecond resolution.
func Wall(base time.Time, ns uint64) time.Time {
	return base.Add(time.Duration(ns)).UTC().Truncate(time.Millisecond)
}
