// Package cube is the user-facing model of edgenf: cubes, their ports and
// peers, transparent attachments, and the registry of NF types. It is pure
// data and validation; internal/engine turns it into kernel state.
package cube

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/datapath"
)

// Cube is one instance of an NF type.
type Cube struct {
	Name   string        `json:"name" yaml:"name"`
	Type   string        `json:"type" yaml:"type"`
	Hook   datapath.Hook `json:"hook" yaml:"hook"`
	Tenant string        `json:"tenant,omitempty" yaml:"tenant,omitempty"`
	// Ports of a standard cube, in index order. Transparent cubes have none.
	Ports []Port `json:"ports,omitempty" yaml:"ports,omitempty"`
	// Config holds the NF type's settings object.
	Config json.RawMessage `json:"config,omitempty" yaml:"-"`
	// Tables holds the NF type's collections: table name → entry key → entry.
	Tables map[string]map[string]json.RawMessage `json:"tables,omitempty" yaml:"-"`
}

// Port is a virtual port of a cube.
type Port struct {
	Name string `json:"name" yaml:"name"`
	// Index is the port number in the fast path (the P4 port number).
	Index int `json:"index" yaml:"index"`
	// Peer is a Linux interface name or another cube's port as "cube:port".
	Peer      string          `json:"peer,omitempty" yaml:"peer,omitempty"`
	MAC       string          `json:"mac,omitempty" yaml:"mac,omitempty"`
	Addresses []string        `json:"addresses,omitempty" yaml:"addresses,omitempty"`
	Config    json.RawMessage `json:"config,omitempty" yaml:"-"`
}

// Topology is the whole desired state: every cube and every attachment.
type Topology struct {
	Cubes map[string]*Cube `json:"cubes"`
	// Attachments maps an attachment point ("cube:port" or an interface name)
	// to the transparent cubes on it, outermost (closest to the peer) first:
	// ingress traffic meets them in this order, egress in reverse.
	Attachments map[string][]string `json:"attachments,omitempty"`
}

// NewTopology returns an empty topology.
func NewTopology() *Topology {
	return &Topology{Cubes: map[string]*Cube{}, Attachments: map[string][]string{}}
}

// Clone returns a deep copy.
func (t *Topology) Clone() *Topology {
	b, err := json.Marshal(t)
	if err != nil {
		panic(err)
	}
	n := NewTopology()
	if err := json.Unmarshal(b, n); err != nil {
		panic(err)
	}
	if n.Cubes == nil {
		n.Cubes = map[string]*Cube{}
	}
	if n.Attachments == nil {
		n.Attachments = map[string][]string{}
	}
	return n
}

// CubeNames lists the cubes in name order.
func (t *Topology) CubeNames() []string {
	names := make([]string, 0, len(t.Cubes))
	for n := range t.Cubes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// AttachedTo returns the point a transparent cube is attached to, or "".
func (t *Topology) AttachedTo(cube string) string {
	for p, list := range t.Attachments {
		for _, c := range list {
			if c == cube {
				return p
			}
		}
	}
	return ""
}

// Port finds a port by name.
func (c *Cube) Port(name string) *Port {
	for i := range c.Ports {
		if c.Ports[i].Name == name {
			return &c.Ports[i]
		}
	}
	return nil
}

// PortByIndex finds a port by fast-path index.
func (c *Cube) PortByIndex(idx int) *Port {
	for i := range c.Ports {
		if c.Ports[i].Index == idx {
			return &c.Ports[i]
		}
	}
	return nil
}

// FreeIndex returns the lowest port index not in use.
func (c *Cube) FreeIndex() int {
	for i := 0; ; i++ {
		if c.PortByIndex(i) == nil {
			return i
		}
	}
}

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)

// CheckName validates a cube, port or tenant name.
func CheckName(field, name string) error {
	if !nameRE.MatchString(name) {
		return Errorf(field, "invalid name %q: use 1-32 letters, digits, '-' or '_', starting with a letter", name)
	}
	return nil
}

// Endpoint is one side of a peering: a cube port or a Linux interface.
type Endpoint struct {
	Cube  string
	Port  string
	Iface string
}

// ParseEndpoint reads "cube:port" or an interface name.
func ParseEndpoint(s string) (Endpoint, error) {
	if s == "" {
		return Endpoint{}, fmt.Errorf("empty peer")
	}
	if c, p, ok := strings.Cut(s, ":"); ok {
		if err := CheckName("peer", c); err != nil {
			return Endpoint{}, err
		}
		if err := CheckName("peer", p); err != nil {
			return Endpoint{}, err
		}
		return Endpoint{Cube: c, Port: p}, nil
	}
	if len(s) > 15 || strings.ContainsAny(s, "/ \t") {
		return Endpoint{}, fmt.Errorf("invalid interface name %q", s)
	}
	return Endpoint{Iface: s}, nil
}

// IsCube reports whether the endpoint is a cube port.
func (e Endpoint) IsCube() bool { return e.Cube != "" }

func (e Endpoint) String() string {
	if e.IsCube() {
		return e.Cube + ":" + e.Port
	}
	return e.Iface
}
