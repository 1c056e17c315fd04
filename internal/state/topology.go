package state

// Topology changes in the journal: a change to a few cubes of a topology
// of thousands appends the cubes it changed (and the attachment points,
// and the endpoints a CNI ADD or DEL plugs in or out with its port), not
// a snapshot of them all. Loading applies them in order with the entry
// records; the snapshot that folds the journal in (when it has grown as big
// as the last one) writes them whole again.

import (
	"encoding/json"
	"fmt"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/endpoint"
)

// Kinds of topology records.
const (
	// KindCube: Value is the cube Cube as a whole (null: deleted), Slot
	// its patch panel slot.
	KindCube = "cube"
	// KindAttachment: Value is the list of cubes attached to point Key
	// (null: none).
	KindAttachment = "attachment"
	// KindEndpoint: Value is endpoint Key as a whole (null: deleted).
	KindEndpoint = "endpoint"
)

// CubeRecord is the record of a cube as it now is (raw, its JSON; nil:
// deleted) in patch panel slot slot.
func CubeRecord(name string, raw json.RawMessage, slot uint32) Record {
	if raw == nil {
		raw = json.RawMessage("null")
	}
	return Record{Kind: KindCube, Cube: name, Value: raw, Slot: slot}
}

// AttachmentRecord is the record of what an attachment point holds now
// (empty: nothing).
func AttachmentRecord(point string, cubes []string) Record {
	raw := json.RawMessage("null")
	if len(cubes) > 0 {
		raw, _ = json.Marshal(cubes)
	}
	return Record{Kind: KindAttachment, Key: point, Value: raw}
}

// EndpointRecord is the record of an endpoint as it now is (nil: deleted).
func EndpointRecord(name string, ep *endpoint.Endpoint) Record {
	raw := json.RawMessage("null")
	if ep != nil {
		raw, _ = json.Marshal(ep)
	}
	return Record{Kind: KindEndpoint, Key: name, Value: raw}
}

// applyTopology applies one topology record to f.
func applyTopology(f *File, r Record) error {
	deleted := len(r.Value) == 0 || string(r.Value) == "null"
	switch r.Kind {
	case KindCube:
		if deleted {
			f.Topology.Remove(r.Cube)
			delete(f.Slots, r.Cube)
			return nil
		}
		c := &cube.Cube{}
		if err := json.Unmarshal(r.Value, c); err != nil {
			return fmt.Errorf("cube %q: %w", r.Cube, err)
		}
		if c.Name != r.Cube {
			return fmt.Errorf("a record of cube %q holds cube %q", r.Cube, c.Name)
		}
		f.Topology.Put(c.Clone()) // normalised as a loaded snapshot's
		f.Slots[r.Cube] = r.Slot
	case KindAttachment:
		if deleted {
			delete(f.Topology.Attachments, r.Key)
			return nil
		}
		var names []string
		if err := json.Unmarshal(r.Value, &names); err != nil {
			return fmt.Errorf("attachment point %q: %w", r.Key, err)
		}
		f.Topology.Attachments[r.Key] = names
	case KindEndpoint:
		if deleted {
			delete(f.Endpoints, r.Key)
			return nil
		}
		ep := &endpoint.Endpoint{}
		if err := json.Unmarshal(r.Value, ep); err != nil {
			return fmt.Errorf("endpoint %q: %w", r.Key, err)
		}
		if ep.Name != r.Key {
			return fmt.Errorf("a record of endpoint %q holds endpoint %q", r.Key, ep.Name)
		}
		f.Endpoints[r.Key] = ep
	default:
		return fmt.Errorf("record of unknown kind %q", r.Kind)
	}
	return nil
}
