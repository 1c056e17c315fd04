package p4rt

// The P4Runtime state of a device's cube (p4nf.P4RuntimeState, in the
// cube's Runtime): digest configurations, the pipeline cookie and the
// replica form each group was written in, kept so that a restarted daemon
// answers the same.

import (
	"context"
	"slices"
	"sort"

	p4nf "github.com/edgenf/edgenf/internal/nf/p4"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/tenant"
)

// updateRuntime changes the cube's P4Runtime state in one engine update.
func (s *Server) updateRuntime(ctx context.Context, who tenant.Actor, name string, fn func(st *p4nf.P4RuntimeState)) error {
	err := s.eng.UpdateAs(ctx, who, func(t *cube.Topology, sc tenant.Scope) error {
		c := t.Lookup(name)
		if c == nil || !sc.Actor.Owns(c) {
			return cube.NotFound("cube", "no cube named %q", name)
		}
		st, err := p4nf.RuntimeState(c)
		if err != nil {
			return err
		}
		fn(&st)
		return p4nf.SetRuntimeState(t, name, st)
	})
	return fromEngine(err)
}

// saveDigests keeps the digest configurations with the cube, so that a
// restarted daemon streams the same digests.
func (s *Server) saveDigests(ctx context.Context, who tenant.Actor, name string, digests map[uint32]*DigestConfig) error {
	list := make([]p4nf.P4RuntimeDigest, 0, len(digests))
	for id, c := range digests {
		list = append(list, p4nf.P4RuntimeDigest{ID: id, MaxTimeoutNs: c.MaxTimeoutNs, MaxListSize: c.MaxListSize, AckTimeoutNs: c.AckTimeoutNs})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return s.updateRuntime(ctx, who, name, func(st *p4nf.P4RuntimeState) { st.Digests = list })
}

// loadDigests reads the digest configurations the cube keeps.
func loadDigests(c *cube.Cube) map[uint32]*DigestConfig {
	out := map[uint32]*DigestConfig{}
	st, err := p4nf.RuntimeState(c)
	if err != nil {
		return out
	}
	for _, x := range st.Digests {
		out[x.ID] = &DigestConfig{MaxTimeoutNs: x.MaxTimeoutNs, MaxListSize: x.MaxListSize, AckTimeoutNs: x.AckTimeoutNs}
	}
	return out
}

// egressPortForm reports whether a client wrote these replicas with the
// deprecated Replica.egress_port (every one of them).
func egressPortForm(rs []*Replica) bool {
	for _, r := range rs {
		if r.Port != nil {
			return false
		}
	}
	return len(rs) > 0
}

// withID returns ids with id in it (in) or not, sorted, and whether that
// changed ids.
func withID(ids []uint32, id uint32, in bool) ([]uint32, bool) {
	i, found := slices.BinarySearch(ids, id)
	switch {
	case in && !found:
		return slices.Insert(slices.Clone(ids), i, id), true
	case !in && found:
		return slices.Delete(slices.Clone(ids), i, i+1), true
	}
	return ids, false
}
