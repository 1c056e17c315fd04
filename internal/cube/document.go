package cube

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/edgenf/edgenf/internal/datapath"
)

// Document is the declarative form of a topology, as written in a topology
// file and returned by GET /v1/topology: lists instead of keyed maps, peers
// written on either side (or both), port indexes optional. Converting a
// topology to a document and back gives the same topology.
type Document struct {
	Cubes       []DocCube       `json:"cubes"`
	Attachments []DocAttachment `json:"attachments,omitempty"`
}

// DocCube is a cube in a document.
type DocCube struct {
	Name   string                       `json:"name" format:"name"`
	Type   string                       `json:"type"`
	Hook   string                       `json:"hook,omitempty" enum:"xdp|tc"`
	Tenant string                       `json:"tenant,omitempty" format:"name"`
	Config json.RawMessage              `json:"config,omitempty"`
	Ports  []DocPort                    `json:"ports,omitempty"`
	Tables map[string][]json.RawMessage `json:"tables,omitempty"`
}

// DocPort is a port in a document; Index nil takes the lowest free index.
type DocPort struct {
	Name      string          `json:"name" format:"name"`
	Index     *int            `json:"index,omitempty" minimum:"0" maximum:"63"`
	Peer      string          `json:"peer,omitempty" format:"peer"`
	MAC       string          `json:"mac,omitempty" format:"mac-unicast"`
	Addresses []string        `json:"addresses,omitempty" format:"port-address"`
	Config    json.RawMessage `json:"config,omitempty"`
}

// DocAttachment attaches a transparent cube; attachments on the same point
// are listed outermost first.
type DocAttachment struct {
	Cube  string `json:"cube" format:"name"`
	Point string `json:"point" format:"peer"`
}

// Topology converts the document; errors name the offending field. A
// document must list its cubes: one without the key is a mistake (it would
// delete everything), an empty topology is written "cubes: []".
func (d *Document) Topology() (*Topology, error) {
	if d.Cubes == nil {
		return nil, Errorf("cubes", "required: a topology document lists its cubes (write \"cubes\": [] for an empty topology)")
	}
	t := NewTopology()
	for i, dc := range d.Cubes {
		field := fmt.Sprintf("cubes[%d]", i)
		if dc.Name != "" {
			field = "cubes." + dc.Name
		}
		if err := t.addDocCube(dc); err != nil {
			return nil, Within(field, err)
		}
	}
	// Peers: each cube-cube peering may be written on one side only.
	for _, name := range t.CubeNames() {
		for _, p := range t.cubes[name].Ports {
			if err := t.completePeer(name, p); err != nil {
				return nil, Within(fmt.Sprintf("cubes.%s.ports[%s].peer", name, p.Name), err)
			}
		}
	}
	for i, a := range d.Attachments {
		if a.Cube == "" || a.Point == "" {
			return nil, Errorf(fmt.Sprintf("attachments[%d]", i), "cube and point are required")
		}
		if err := t.Attach(a.Cube, a.Point, "last"); err != nil {
			return nil, Within(fmt.Sprintf("attachments[%d]", i), err)
		}
	}
	return t, nil
}

func (t *Topology) addDocCube(dc DocCube) error {
	if err := CheckName("name", dc.Name); err != nil {
		return err
	}
	if _, dup := t.cubes[dc.Name]; dup {
		return Conflict("name", "cube %q is defined twice", dc.Name)
	}
	typ, err := Lookup(dc.Type)
	if err != nil {
		return err
	}
	c := &Cube{Name: dc.Name, Type: dc.Type, Hook: datapath.Hook(dc.Hook), Tenant: dc.Tenant, Config: dc.Config}
	if typ.Upgrade != nil { // a document exported by an older version
		if err := typ.Upgrade(c); err != nil {
			return Within("config", err)
		}
	}
	for _, p := range dc.Ports {
		if p.Index != nil {
			c.Ports = append(c.Ports, Port{Name: p.Name, Index: *p.Index, Peer: p.Peer, MAC: p.MAC, Addresses: p.Addresses, Config: p.Config})
		}
	}
	for _, p := range dc.Ports {
		if p.Index == nil {
			c.Ports = append(c.Ports, Port{Name: p.Name, Index: c.FreeIndex(), Peer: p.Peer, MAC: p.MAC, Addresses: p.Addresses, Config: p.Config})
		}
	}
	sort.SliceStable(c.Ports, func(i, j int) bool { return c.Ports[i].Index < c.Ports[j].Index })
	t.Put(c)
	for name, rows := range dc.Tables {
		tb, err := typ.Table(name)
		if err != nil {
			return Within("tables", err)
		}
		for i, raw := range rows {
			_, key, err := tb.DecodeEntry(c, raw)
			if err != nil {
				return Within(fmt.Sprintf("[%d]", i), err)
			}
			if _, dup := c.Tables[name][key]; dup {
				return Conflict(fmt.Sprintf("tables.%s[%d]", name, i), "duplicate entry %q", key)
			}
			if _, err := t.PutEntry(c.Name, name, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *Topology) completePeer(name string, p Port) error {
	if p.Peer == "" {
		return nil
	}
	ep, err := ParseEndpoint(p.Peer)
	if err != nil || !ep.IsCube() {
		return nil // checked by Validate
	}
	_, op, err := t.peerPort(ep)
	if err != nil {
		return err
	}
	self := name + ":" + p.Name
	switch op.Peer {
	case "":
		op.Peer = self
	case self:
	default:
		return Conflict("", "%s is peered with %s, but %s says it is peered with %s", self, p.Peer, ep, op.Peer)
	}
	return nil
}

// Document converts the topology to its declarative form, cubes by name,
// each cube-cube peering written on both sides.
func (t *Topology) Document() *Document {
	d := &Document{Cubes: []DocCube{}}
	for _, name := range t.CubeNames() {
		c := t.cubes[name]
		dc := DocCube{Name: c.Name, Type: c.Type, Hook: string(c.Hook), Tenant: c.Tenant, Config: c.Config}
		for _, p := range c.Ports {
			idx := p.Index
			dc.Ports = append(dc.Ports, DocPort{Name: p.Name, Index: &idx, Peer: p.Peer, MAC: p.MAC, Addresses: p.Addresses, Config: p.Config})
		}
		for tname, rows := range c.Tables {
			if dc.Tables == nil {
				dc.Tables = map[string][]json.RawMessage{}
			}
			keys := make([]string, 0, len(rows))
			for k := range rows {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				dc.Tables[tname] = append(dc.Tables[tname], rows[k])
			}
		}
		d.Cubes = append(d.Cubes, dc)
	}
	points := make([]string, 0, len(t.Attachments))
	for p := range t.Attachments {
		points = append(points, p)
	}
	sort.Strings(points)
	for _, p := range points {
		for _, c := range t.Attachments[p] {
			d.Attachments = append(d.Attachments, DocAttachment{Cube: c, Point: p})
		}
	}
	return d
}
