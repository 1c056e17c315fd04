// Package cube is the user-facing model of edgenf: cubes, their ports and
// peers, transparent attachments, and the registry of NF types. It is pure
// data and validation; internal/engine turns it into kernel state.
package cube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/edgenf/edgenf/internal/datapath"
)

// Cube is one instance of an NF type.
type Cube struct {
	Name   string        `json:"name" yaml:"name" format:"name"`
	Type   string        `json:"type" yaml:"type"`
	Hook   datapath.Hook `json:"hook" yaml:"hook" enum:"xdp|tc"`
	Tenant string        `json:"tenant,omitempty" yaml:"tenant,omitempty" format:"name"`
	// Ports of a standard cube, in index order. Transparent cubes have none.
	Ports []Port `json:"ports,omitempty" yaml:"ports,omitempty"`
	// Config holds the NF type's settings object.
	Config json.RawMessage `json:"config,omitempty" yaml:"-"`
	// Tables holds the NF type's collections: table name → entry key → entry.
	// An entry is set through SetRow, which records it (RowsSince).
	Tables map[string]map[string]json.RawMessage `json:"tables,omitempty" yaml:"-"`
	// Runtime holds state the daemon's control-plane services keep for the
	// cube, by service ("p4runtime": the pipeline cookie, digest
	// configurations): persisted with the cube, shown, never part of its
	// settings, and not set through the REST API.
	Runtime map[string]json.RawMessage `json:"runtime,omitempty" yaml:"-"`
	// Down is set in the daemon's answers only, never in the desired
	// state: why the cube is not running (it could not be restored). Its
	// frames are dropped until it is changed or deleted.
	Down string `json:"down,omitempty" yaml:"down,omitempty"`
	// partial: the cube holds some of its entries only (WithRows).
	partial bool
	// rev records the entries set since the cube was copied (revision.go).
	rev *revision
}

// Port is a virtual port of a cube.
type Port struct {
	Name string `json:"name" yaml:"name" format:"name"`
	// Index is the port number in the fast path (the P4 port number).
	Index int `json:"index" yaml:"index" minimum:"0" maximum:"63"`
	// Peer is a Linux interface name or another cube's port as "cube:port".
	Peer      string          `json:"peer,omitempty" yaml:"peer,omitempty" format:"peer"`
	MAC       string          `json:"mac,omitempty" yaml:"mac,omitempty" format:"mac-unicast"`
	Addresses []string        `json:"addresses,omitempty" yaml:"addresses,omitempty" format:"port-address"`
	Config    json.RawMessage `json:"config,omitempty" yaml:"-"`
}

// Topology is the whole desired state: every cube and every attachment.
// Its cubes are reached only through its methods (Lookup, Cubes, Put,
// Edit, Remove...), so that every edit is recorded (cow.go).
type Topology struct {
	cubes map[string]*Cube
	// Attachments maps an attachment point ("cube:port" or an interface name)
	// to the transparent cubes on it, outermost (closest to the peer) first:
	// ingress traffic meets them in this order, egress in reverse.
	Attachments map[string][]string `json:"attachments,omitempty"`
	// edits records what a change touched (cow.go).
	edits edits
}

// NewTopology returns a topology of the cubes given (by their names) and
// no attachments.
func NewTopology(cubes ...*Cube) *Topology {
	t := &Topology{cubes: make(map[string]*Cube, len(cubes)), Attachments: map[string][]string{}}
	for _, c := range cubes {
		t.cubes[c.Name] = c
	}
	return t
}

// topologyJSON is a topology as state files and the API write it.
type topologyJSON struct {
	Cubes       map[string]*Cube    `json:"cubes"`
	Attachments map[string][]string `json:"attachments,omitempty"`
}

// MarshalJSON writes the topology as {"cubes": {...}, "attachments": {...}}.
func (t Topology) MarshalJSON() ([]byte, error) {
	return json.Marshal(topologyJSON{t.cubes, t.Attachments})
}

// UnmarshalJSON reads what MarshalJSON writes, into the maps t has (as
// decoding into the fields would).
func (t *Topology) UnmarshalJSON(data []byte) error {
	doc := topologyJSON{t.cubes, t.Attachments}
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	t.cubes, t.Attachments = doc.Cubes, doc.Attachments
	return nil
}

// walks counts the walks over a topology's cubes (Cubes) in this process.
var walks atomic.Uint64

// CubeWalks returns how many times a topology's cubes were walked in this
// process: a test's proof that a path costs what it changes, not the size
// of the topology.
func CubeWalks() uint64 { return walks.Load() }

// Cubes iterates over the cubes by name, in no order. They are shared with
// the applied state in a change's working copy: Edit returns one to change.
func (t *Topology) Cubes() iter.Seq2[string, *Cube] {
	return func(yield func(string, *Cube) bool) {
		walks.Add(1)
		for name, c := range t.cubes {
			if !yield(name, c) {
				return
			}
		}
	}
}

// Lookup returns cube name, to read (nil: there is none). It may be shared
// with the applied state: Edit returns one to change.
func (t *Topology) Lookup(name string) *Cube { return t.cubes[name] }

// Has reports whether there is a cube name.
func (t *Topology) Has(name string) bool {
	_, ok := t.cubes[name]
	return ok
}

// NumCubes returns how many cubes there are.
func (t *Topology) NumCubes() int { return len(t.cubes) }

// Clone returns a deep copy. Raw JSON values (settings, entries) are never
// modified in place, so they are shared.
func (t *Topology) Clone() *Topology {
	n := &Topology{cubes: make(map[string]*Cube, len(t.cubes)), Attachments: make(map[string][]string, len(t.Attachments))}
	for k, c := range t.Cubes() {
		n.cubes[k] = c.Clone()
	}
	for k, v := range t.Attachments {
		n.Attachments[k] = append([]string(nil), v...)
	}
	return n
}

// Clone returns a deep copy of the cube (raw JSON values shared). The
// copy records the entries set in it from now on (RowsSince).
func (c *Cube) Clone() *Cube {
	n := *c
	n.rev = c.copied()
	n.Ports = make([]Port, len(c.Ports))
	for i, p := range c.Ports {
		p.Addresses = append([]string(nil), p.Addresses...)
		n.Ports[i] = p
	}
	if c.Ports == nil {
		n.Ports = nil
	}
	if c.Runtime != nil {
		n.Runtime = make(map[string]json.RawMessage, len(c.Runtime))
		for k, v := range c.Runtime {
			n.Runtime[k] = v
		}
	}
	if c.Tables != nil {
		n.Tables = make(map[string]map[string]json.RawMessage, len(c.Tables))
		for name, rows := range c.Tables {
			n.Tables[name] = maps.Clone(rows) // a copy of the map's memory, not 1,000 inserts
		}
	}
	return &n
}

// WithOwnTable returns a copy of c that shares all but table's entry map
// with it (copied): for setting that table's entries while others still
// read c. The copy records the entries set in it (RowsSince), as a Clone.
func (c *Cube) WithOwnTable(table string) *Cube {
	n := *c
	n.Tables = maps.Clone(c.Tables)
	if n.Tables == nil {
		n.Tables = map[string]map[string]json.RawMessage{}
	}
	n.Tables[table] = maps.Clone(c.Tables[table])
	n.rev = c.copied()
	return &n
}

// SetRow sets one table entry (raw nil or null: deletes it), creating and
// removing table maps as the model keeps them: no empty tables.
func (c *Cube) SetRow(table, key string, raw json.RawMessage) {
	c.note(table, key)
	if raw == nil || string(raw) == "null" {
		delete(c.Tables[table], key)
		if len(c.Tables[table]) == 0 {
			delete(c.Tables, table)
		}
		return
	}
	if c.Tables == nil {
		c.Tables = map[string]map[string]json.RawMessage{}
	}
	if c.Tables[table] == nil {
		c.Tables[table] = map[string]json.RawMessage{}
	}
	c.Tables[table][key] = raw
}

// Equal reports whether two cubes are the same in every field but Runtime.
func (c *Cube) Equal(o *Cube) bool {
	if c.Name != o.Name || c.Type != o.Type || c.Hook != o.Hook || c.Tenant != o.Tenant ||
		!bytes.Equal(c.Config, o.Config) || len(c.Ports) != len(o.Ports) || len(c.Tables) != len(o.Tables) {
		return false
	}
	for i := range c.Ports {
		a, b := c.Ports[i], o.Ports[i]
		if a.Name != b.Name || a.Index != b.Index || a.Peer != b.Peer || a.MAC != b.MAC ||
			!slices.Equal(a.Addresses, b.Addresses) || !bytes.Equal(a.Config, b.Config) {
			return false
		}
	}
	for name, rows := range c.Tables {
		other, ok := o.Tables[name]
		if !ok || len(rows) != len(other) {
			return false
		}
		for k, v := range rows {
			if w, ok := other[k]; !ok || !bytes.Equal(v, w) {
				return false
			}
		}
	}
	return true
}

// Row names one table entry of a cube.
type Row struct{ Table, Key string }

// WithRows returns a copy of c whose tables hold only the named entries
// that c has (entries shared): what a type derives entry by entry (its
// slices' chains) is derived from it for those entries alone. The copy is
// Partial.
func (c *Cube) WithRows(rows []Row) *Cube {
	n := *c
	n.Tables, n.partial, n.rev = nil, true, nil
	for _, r := range rows {
		raw, ok := c.Tables[r.Table][r.Key]
		if !ok {
			continue
		}
		if n.Tables == nil {
			n.Tables = map[string]map[string]json.RawMessage{}
		}
		if n.Tables[r.Table] == nil {
			n.Tables[r.Table] = map[string]json.RawMessage{}
		}
		n.Tables[r.Table][r.Key] = raw
	}
	return &n
}

// ClearTable removes every entry of table.
func (c *Cube) ClearTable(table string) {
	for key := range c.Tables[table] {
		c.note(table, key)
	}
	delete(c.Tables, table)
}

// ClearTables removes every entry.
func (c *Cube) ClearTables() {
	c.Tables = nil
	c.forget()
}

// Partial reports whether c holds some of its entries only (WithRows): a
// question about those entries, never the cube as it is (an index of the
// cube's entries kept between questions must not follow it).
func (c *Cube) Partial() bool { return c.partial }

// SameRuntime reports whether c and o hold the same runtime state (which
// Equal leaves out: no program or control plane depends on it).
func (c *Cube) SameRuntime(o *Cube) bool {
	return maps.EqualFunc(c.Runtime, o.Runtime, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })
}

// CubeNames lists the cubes in name order.
func (t *Topology) CubeNames() []string {
	names := make([]string, 0, len(t.cubes))
	for n := range t.Cubes() {
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

// validName reports whether name matches ^[A-Za-z][A-Za-z0-9_-]{0,31}$
// (by hand: every peer of every cube is checked with every change).
func validName(name string) bool {
	if len(name) == 0 || len(name) > 32 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case b >= 'A' && b <= 'Z', b >= 'a' && b <= 'z':
		case i > 0 && (b >= '0' && b <= '9' || b == '_' || b == '-'):
		default:
			return false
		}
	}
	return true
}

// CheckName validates a cube, port or tenant name.
func CheckName(field, name string) error {
	if !validName(name) {
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

// MarshalJSON writes the cube with its table entries copied as they are
// (entries are stored as canonical JSON): encoding a cube with 100k entries
// must not cost a reflection pass per entry.
func (c *Cube) MarshalJSON() ([]byte, error) {
	type plain Cube
	p := plain(*c)
	p.Tables = nil
	head, err := json.Marshal(p)
	if err != nil || len(c.Tables) == 0 {
		return head, err
	}
	var b bytes.Buffer
	b.Grow(len(head) + 64*c.entryCount())
	b.Write(head[:len(head)-1])
	b.WriteString(`,"tables":{`)
	for i, name := range sortedKeys(c.Tables) {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, name)
		b.WriteString(":{")
		rows := c.Tables[name]
		for j, k := range sortedKeys(rows) {
			if j > 0 {
				b.WriteByte(',')
			}
			writeString(&b, k)
			b.WriteByte(':')
			if len(rows[k]) == 0 {
				b.WriteString("null")
			} else {
				b.Write(rows[k])
			}
		}
		b.WriteByte('}')
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}

func (c *Cube) entryCount() int {
	n := 0
	for _, rows := range c.Tables {
		n += len(rows)
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}
