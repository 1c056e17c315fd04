package p4

// Long polls for digests and packet-ins.

import (
	"context"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
)

// PollArgs are the arguments of the poll action: events after seq After
// (0: from the oldest buffered), of Kind ("digest", "packet_in" or "" for
// both), waiting up to TimeoutMs (at most 60000) for the first one.
type PollArgs struct {
	After     uint64 `json:"after"`
	Kind      string `json:"kind,omitempty" enum:"digest|packet_in|idle_timeout"`
	TimeoutMs int    `json:"timeout_ms,omitempty" minimum:"0" maximum:"60000"`
	Max       int    `json:"max,omitempty" doc:"at most this many events (1..1024; else 1024)"`
}

// PollResult is the answer of a poll: the events, the seq to poll after
// next time, and how many events after After were overwritten unread.
type PollResult struct {
	Events []Event `json:"events"`
	Next   uint64  `json:"next"`
	Missed uint64  `json:"missed"`
}

type poll struct {
	s       *slowState
	a       PollArgs
	timeout time.Duration
}

func (p poll) Wait(ctx context.Context) (any, error) {
	t := time.NewTimer(p.timeout)
	defer t.Stop()
	for {
		evs, missed, next, ch := p.s.since(p.a.After, p.a.Kind, p.a.Max)
		if len(evs) > 0 || missed > 0 {
			return PollResult{Events: evs, Next: next, Missed: missed}, nil
		}
		p.a.After = next
		select {
		case <-ch:
		case <-t.C:
			return PollResult{Events: []Event{}, Next: next}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func pollAction(h cube.Handle, c *cube.Cube, args any) (any, error) {
	a, _ := args.(*PollArgs)
	if a == nil {
		a = &PollArgs{}
	}
	switch a.Kind {
	case "", "digest", "packet_in", "idle_timeout":
	default:
		return nil, cube.Errorf("kind", "%q: want digest, packet_in, idle_timeout or nothing (all)", a.Kind)
	}
	if a.TimeoutMs < 0 || time.Duration(a.TimeoutMs)*time.Millisecond > maxPollWait {
		return nil, cube.Errorf("timeout_ms", "%d: want 0..%d", a.TimeoutMs, maxPollWait.Milliseconds())
	}
	if a.Max <= 0 || a.Max > eventBuffer {
		a.Max = eventBuffer
	}
	s, err := stateOf(h)
	if err != nil {
		return nil, err
	}
	return poll{s: s, a: *a, timeout: time.Duration(a.TimeoutMs) * time.Millisecond}, nil
}
