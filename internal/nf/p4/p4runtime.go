package p4

// The state a P4Runtime controller leaves on a p4 cube (internal/p4rt):
// kept in the cube's Runtime, beside the settings, persisted with the cube.

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// RuntimeKey names the P4Runtime state in a cube's Runtime.
const RuntimeKey = "p4runtime"

// P4RuntimeState is what the P4Runtime server keeps for a cube across
// daemon restarts.
type P4RuntimeState struct {
	// Cookie is the cookie of the pipeline the controller set
	// (ForwardingPipelineConfig.cookie): a full uint64, as a JSON string
	// so that no JSON reader rounds it.
	Cookie *uint64 `json:"cookie,omitempty,string"`
	// Digests are the digests the controller asked to receive.
	Digests []P4RuntimeDigest `json:"digests,omitempty"`
	// EgressPortGroups are the multicast groups whose replicas the
	// controller wrote with the deprecated Replica.egress_port: they are
	// read back in that form (older clients read only that field).
	EgressPortGroups []uint32 `json:"egress_port_groups,omitempty"`
	// EgressPortSessions: the same for clone sessions.
	EgressPortSessions []uint32 `json:"egress_port_sessions,omitempty"`
}

// P4RuntimeDigest is a digest's P4Runtime configuration (DigestEntry.config).
type P4RuntimeDigest struct {
	ID           uint32 `json:"id"`
	MaxTimeoutNs int64  `json:"max_timeout_ns,omitempty"`
	MaxListSize  int32  `json:"max_list_size,omitempty"`
	AckTimeoutNs int64  `json:"ack_timeout_ns,omitempty"`
}

// RuntimeState returns the cube's P4Runtime state (zero if none).
func RuntimeState(c *cube.Cube) (P4RuntimeState, error) {
	var st P4RuntimeState
	if c == nil || c.Runtime[RuntimeKey] == nil {
		return st, nil
	}
	err := cube.DecodeInto("runtime."+RuntimeKey, c.Runtime[RuntimeKey], &st)
	return st, err
}

// SetRuntimeState stores the cube's P4Runtime state (the zero state
// removes it).
func SetRuntimeState(t *cube.Topology, name string, st P4RuntimeState) error {
	if st.Cookie == nil && len(st.Digests) == 0 && len(st.EgressPortGroups) == 0 && len(st.EgressPortSessions) == 0 {
		return t.SetRuntime(name, RuntimeKey, nil)
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return t.SetRuntime(name, RuntimeKey, raw)
}

// upgrade moves the P4Runtime state that older versions kept in the
// settings (p4runtime_cookie, p4runtime_digests) to the cube's Runtime.
// The settings are decoded with exact integers: a cookie above 2^53
// survives.
func upgrade(c *cube.Cube) error {
	if !bytes.Contains(c.Config, []byte(`"p4runtime_`)) {
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(c.Config, &raw); err != nil {
		return nil // not an object: validation says so
	}
	cookie, digests := raw["p4runtime_cookie"], raw["p4runtime_digests"]
	if cookie == nil && digests == nil {
		return nil
	}
	st, err := RuntimeState(c)
	if err != nil {
		return err
	}
	if cookie != nil && st.Cookie == nil {
		var v uint64
		if err := json.Unmarshal(cookie, &v); err != nil {
			return cube.Errorf("p4runtime_cookie", "not a 64-bit cookie: %s", cookie)
		}
		st.Cookie = &v
	}
	if digests != nil && st.Digests == nil {
		if err := cube.DecodeInto("p4runtime_digests", digests, &st.Digests); err != nil {
			return err
		}
	}
	delete(raw, "p4runtime_cookie")
	delete(raw, "p4runtime_digests")
	conf, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("p4 settings: %w", err)
	}
	c.Config = conf
	if c.Runtime == nil {
		c.Runtime = map[string]json.RawMessage{}
	}
	rs, err := json.Marshal(st)
	if err != nil {
		return err
	}
	c.Runtime[RuntimeKey] = rs
	return nil
}

// TableRuntime is the cube's table runtime (its maps, through the
// program's model), for the P4Runtime server's direct counters and meters
// and counter writes.
func TableRuntime(h cube.Handle, c *cube.Cube) (*tableruntime.Program, error) { return runtimeOf(h, c) }
