package p4

// The slow path's read-only views of a p4 cube: recent digests and
// packet-ins, learned entries, statistics.

import (
	"sort"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/p4/ir"
)

func listDigests(h cube.Handle, c *cube.Cube) (any, error) { return listEvents(h, "digest") }

func listPacketIns(h cube.Handle, c *cube.Cube) (any, error) { return listEvents(h, "packet_in") }

func listEvents(h cube.Handle, kind string) (any, error) {
	s, err := stateOf(h)
	if err != nil {
		return nil, err
	}
	evs, _, _, _ := s.since(0, kind, eventBuffer)
	return evs, nil
}

func listLearned(h cube.Handle, c *cube.Cube) (any, error) {
	s, err := stateOf(h)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	out := make([]LearnedEntry, 0, len(s.learned))
	for _, e := range s.learned {
		out = append(out, *e)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

func slowPathStats(h cube.Handle, c *cube.Cube) (any, error) {
	s, err := stateOf(h)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	st := s.st
	st.LearnedEntries = len(s.learned)
	st.BufferedEvents = len(s.events)
	st.NextSeq = s.next
	s.mu.Unlock()
	r, err := programOf(c)
	if err != nil {
		return nil, err
	}
	if sp := r.Info.Edgenf.SlowPath; sp != nil && sp.StatsMap != "" {
		m, err := h.Map(sp.StatsMap)
		if err != nil {
			return nil, err
		}
		var k [ir.SPStats]uint64
		for i := range k {
			var per []uint64
			if err := m.Lookup(uint32(i), &per); err != nil {
				return nil, err
			}
			for _, v := range per {
				k[i] += v
			}
		}
		st.DigestsSent, st.DigestsLost = k[ir.SPDigestSent], k[ir.SPDigestLost]
		st.LogsSent, st.LogsLost = k[ir.SPLogSent], k[ir.SPLogLost]
	}
	return st, nil
}
