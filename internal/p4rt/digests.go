package p4rt

// Digest configurations, kept with the cube so that a restarted daemon
// streams the same digests.

import (
	"context"
	"encoding/json"
	"sort"

	p4nf "github.com/edgenf/edgenf/internal/nf/p4"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/tenant"
)

// saveDigests keeps the digest configurations in the cube's settings, so
// that a restarted daemon streams the same digests.
func (s *Server) saveDigests(ctx context.Context, who tenant.Actor, name string, digests map[uint32]*DigestConfig) error {
	list := make([]p4nf.P4RuntimeDigest, 0, len(digests))
	for id, c := range digests {
		list = append(list, p4nf.P4RuntimeDigest{ID: id, MaxTimeoutNs: c.MaxTimeoutNs, MaxListSize: c.MaxListSize, AckTimeoutNs: c.AckTimeoutNs})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	err := s.eng.UpdateAs(ctx, who, func(t *cube.Topology, sc tenant.Scope) error {
		c, ok := t.Cubes[name]
		if !ok || !sc.Actor.Owns(c) {
			return cube.NotFound("cube", "no cube named %q", name)
		}
		raw := map[string]any{}
		if len(c.Config) > 0 {
			if err := json.Unmarshal(c.Config, &raw); err != nil {
				return err
			}
		}
		if len(list) > 0 {
			raw["p4runtime_digests"] = list
		} else {
			delete(raw, "p4runtime_digests")
		}
		conf, err := json.Marshal(raw)
		if err != nil {
			return err
		}
		return t.SetConfig(name, conf)
	})
	return fromEngine(err)
}

// loadDigests reads the digest configurations a cube's settings keep.
func loadDigests(c *cube.Cube) map[uint32]*DigestConfig {
	out := map[uint32]*DigestConfig{}
	var set p4nf.Settings
	if c == nil || json.Unmarshal(c.Config, &set) != nil {
		return out
	}
	for _, x := range set.P4RuntimeDigests {
		out[x.ID] = &DigestConfig{MaxTimeoutNs: x.MaxTimeoutNs, MaxListSize: x.MaxListSize, AckTimeoutNs: x.AckTimeoutNs}
	}
	return out
}
