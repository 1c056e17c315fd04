// Package lb is the lb NF: an L4 load balancer for TCP/UDP virtual
// services (VIP, protocol, port), IPv4 or IPv6, each with weighted backends
// chosen by Maglev consistent hashing and kept per flow in a connection
// table. Three modes: DSR (MAC rewrite; the backend owns the VIP and replies
// directly), tunnel (DSR through an IP-in-IP encapsulation to backends
// beyond the link) and NAT (destination rewrite to the backend, replies
// translated back).
package lb

import (
	"embed"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/schema"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// Limits of the fast path (lb.bpf.c).
const (
	MaxServices      = 256
	MaxBackends      = 4096 // over all services
	MaxServiceBE     = 1024 // per service
	MaxConns         = 1 << 18
	DefaultTableSize = 65537
	MaxTableSize     = 131071
	MaxWeight        = 10000
)

// Config is the cube's settings.
type Config struct {
	// Unknown is what happens to traffic that is neither for a service, a
	// reply of a NAT flow, nor ARP for a VIP/port address: drop (default)
	// or pass (to the Linux stack of the interface it came in by).
	Unknown string `json:"unknown,omitempty" enum:"drop|pass"`
}

// Validate fills in the default.
func (c *Config) Validate(*cube.Cube) error {
	if c.Unknown == "" {
		c.Unknown = "drop"
	}
	if c.Unknown != "drop" && c.Unknown != "pass" {
		return cube.Errorf("unknown", "unknown value %q (want drop or pass)", c.Unknown)
	}
	return nil
}

// Service is a virtual service.
type Service struct {
	VIP      string `json:"vip" format:"ip-unicast" doc:"the service's address, IPv4 or IPv6: unicast, not loopback (a link-local one: 422)"`
	Protocol string `json:"protocol,omitempty" format:"tcp-or-udp"` // tcp (default) or udp
	Port     uint16 `json:"port" minimum:"1"`
	// Mode: dsr (default), tunnel or nat.
	Mode string `json:"mode,omitempty" enum:"dsr|tunnel|nat" doc:"dsr (default): MAC rewrite, the backends own the VIP on the link; tunnel: DSR inside IPv6-in-IPv6 (IPv4-in-IPv4 for an IPv4 VIP) from the backend's cube port address to the backend, which decapsulates; nat: destination rewrite, replies translated back"`
	// TableSize is the Maglev table size: a prime, default 65537, at most
	// 131071. Larger tables follow the weights more finely.
	TableSize uint32 `json:"table_size,omitempty" maximum:"131071" doc:"the Maglev table size: a prime (422 otherwise), at least 10 per backend; default 65537"`
	// Backends may be given here and/or as entries of the backends table.
	Backends []Backend `json:"backends,omitempty" maxItems:"1024"`
}

// RefineSchema: only NAT services rewrite the port; a service's own
// backends do not name it.
func (*Service) RefineSchema(s *schema.Schema) {
	item := *s.Properties["backends"].Items
	item.Properties = maps.Clone(item.Properties)
	item.Properties["service"] = schema.Absent()
	nat := item
	nat.Properties = maps.Clone(item.Properties)
	item.Properties["target_port"] = schema.Absent()
	backends := func(item schema.Schema) *schema.Schema {
		b := *s.Properties["backends"]
		b.Items = &item
		return &b
	}
	s.AnyOf = []*schema.Schema{
		schema.Branch(nil, map[string]*schema.Schema{"mode": {Type: "string", Enum: []string{"dsr", "tunnel"}}, "backends": backends(item)}),
		schema.Branch([]string{"mode"}, map[string]*schema.Schema{"mode": {Type: "string", Enum: []string{"nat"}}, "backends": backends(nat)}),
	}
}

// Backend is a real server of a service.
type Backend struct {
	// Service is the key of the service ("198.18.9.1:tcp:80"); only in the
	// backends table, not inside a service.
	Service string `json:"service,omitempty" format:"lb-service" doc:"the service's key, vip:protocol:port (backends table entries only)"`
	Name    string `json:"name" format:"name"`
	Address string `json:"address" format:"ip" doc:"the backend's address, of the service VIP's family (422 otherwise)"`
	// MAC of the backend (or of the next hop towards it).
	MAC string `json:"mac" format:"mac"`
	// Port of the cube the backend is reached through.
	Port string `json:"port" format:"name"`
	// TargetPort (NAT only) rewrites the destination port; 0 keeps the
	// service port.
	TargetPort uint16 `json:"target_port,omitempty" doc:"NAT services only: the port backends listen on; 0 keeps the service's"`
	// Weight: share of new flows relative to the other backends (default
	// 1; 1..10000).
	Weight *uint32 `json:"weight,omitempty" minimum:"1" maximum:"10000"`
	// State: active (default), draining (keeps its flows, gets no new
	// ones) or disabled (gets nothing; its flows move to others).
	State string `json:"state,omitempty" enum:"active|draining|disabled"`
}

// TableBackend is an entry of the backends table: a backend that names
// its service.
type TableBackend struct{ Backend }

// RefineSchema: an entry of the backends table names its service.
func (*TableBackend) RefineSchema(s *schema.Schema) {
	s.Required = append(s.Required, "service")
}

func init() {
	schema.Register("lb-service", schema.Format{Pattern: schema.Anchored("(" + schema.IPv4 + "|" + schema.IPv6 + "):(tcp|udp):" + schema.Port),
		Doc: "a service's key, vip:protocol:port, e.g. 198.18.9.1:tcp:80 or 2001:db8::1:tcp:80"})
}

// Key is the service's identity: "vip:protocol:port".
func (s *Service) Key() string { return fmt.Sprintf("%s:%s:%d", s.VIP, s.Protocol, s.Port) }

// ParseServiceKey splits "vip:protocol:port" (an IPv6 VIP keeps its colons:
// "2001:db8::1:tcp:80").
func ParseServiceKey(k string) (netip.Addr, string, uint16, error) {
	parts := strings.Split(k, ":")
	if len(parts) < 3 {
		return netip.Addr{}, "", 0, fmt.Errorf("invalid service %q: want vip:protocol:port, e.g. 198.18.9.1:tcp:80 or 2001:db8::1:tcp:80", k)
	}
	parts = []string{strings.Join(parts[:len(parts)-2], ":"), parts[len(parts)-2], parts[len(parts)-1]}
	a, err := netip.ParseAddr(parts[0])
	p, err2 := strconv.ParseUint(parts[2], 10, 16)
	if err != nil || a.Zone() != "" || err2 != nil || (parts[1] != "tcp" && parts[1] != "udp") {
		return netip.Addr{}, "", 0, fmt.Errorf("invalid service %q: want vip:protocol:port, e.g. 198.18.9.1:tcp:80 or 2001:db8::1:tcp:80", k)
	}
	return a, parts[1], uint16(p), nil
}

// Validate checks and canonicalises a service, and checks it has backends
// (inline or in the backends table of c).
func (s *Service) Validate(c *cube.Cube) error {
	a, err := netip.ParseAddr(strings.TrimSpace(s.VIP))
	if err != nil || a.Zone() != "" {
		return cube.Errorf("vip", "invalid address %q: want an IPv4 or IPv6 address", s.VIP)
	}
	if a.IsUnspecified() || a.IsMulticast() || a.IsLinkLocalUnicast() {
		return cube.Unprocessable("vip", "%s cannot be a service address (unspecified, multicast or link-local)", a)
	}
	s.VIP = a.Unmap().String()
	if s.Protocol == "" {
		s.Protocol = "tcp"
	}
	s.Protocol = strings.ToLower(s.Protocol)
	if s.Protocol != "tcp" && s.Protocol != "udp" {
		return cube.Errorf("protocol", "unknown protocol %q (want tcp or udp)", s.Protocol)
	}
	if s.Port == 0 {
		return cube.Errorf("port", "required: the service port, 1..65535")
	}
	if s.Mode == "" {
		s.Mode = "dsr"
	}
	if s.Mode != "dsr" && s.Mode != "tunnel" && s.Mode != "nat" {
		return cube.Errorf("mode", "unknown mode %q (want dsr, tunnel or nat)", s.Mode)
	}
	if s.TableSize == 0 {
		s.TableSize = DefaultTableSize
	}
	if s.TableSize > MaxTableSize {
		return cube.Errorf("table_size", "%d: want a prime up to %d (e.g. 251, 4099, 65537, 131071)", s.TableSize, MaxTableSize)
	}
	if !IsPrime(s.TableSize) {
		return cube.Unprocessable("table_size", "%d: want a prime up to %d (e.g. 251, 4099, 65537, 131071)", s.TableSize, MaxTableSize)
	}
	if len(s.Backends) > MaxServiceBE {
		return cube.Errorf("backends", "%d backends, at most %d per service", len(s.Backends), MaxServiceBE)
	}
	for i := range s.Backends {
		b := &s.Backends[i]
		field := fmt.Sprintf("backends[%d]", i)
		if b.Service != "" {
			return cube.Errorf(field+".service", "only entries of the backends table name their service")
		}
		if err := b.syntax(); err != nil {
			return cube.Within(field, err)
		}
		if err := b.sameFamily(s); err != nil {
			return cube.Within(field, err)
		}
		if b.TargetPort != 0 && s.Mode != "nat" {
			return cube.Errorf(field+".target_port", "only NAT services rewrite the port (service %s is %s)", s.Key(), s.Mode)
		}
	}
	if uint32(len(s.Backends))*10 > s.TableSize {
		return cube.Unprocessable("table_size", "%d is too small for %d backends: give each at least 10 entries (e.g. 65537)", s.TableSize, len(s.Backends))
	}
	names := map[string]bool{}
	addrs := map[string]string{}
	for i := range s.Backends {
		b := &s.Backends[i]
		field := fmt.Sprintf("backends[%d]", i)
		if err := b.against(c, s); err != nil {
			return cube.Within(field, err)
		}
		if names[b.Name] {
			return cube.Conflict(field+".name", "duplicate backend name %q", b.Name)
		}
		names[b.Name] = true
		if o, dup := addrs[b.Address]; dup {
			return cube.Conflict(field+".address", "%s is already backend %s", b.Address, o)
		}
		addrs[b.Address] = b.Name
	}
	all := len(s.Backends) + len(tableBackends(c, s.Key()))
	if all == 0 {
		return cube.Conflict("backends", "service %s has no backends: give at least one here or add it to the backends table in the same change", s.Key())
	}
	if all > MaxServiceBE {
		return cube.Conflict("backends", "%d backends, at most %d per service", all, MaxServiceBE)
	}
	if uint32(all)*10 > s.TableSize {
		return cube.Conflict("table_size", "%d is too small for %d backends: give each at least 10 entries (e.g. 65537)", s.TableSize, all)
	}
	return nil
}

// syntax checks and canonicalises a backend's own fields.
func (b *Backend) syntax() error {
	if err := cube.CheckName("name", b.Name); err != nil {
		return err
	}
	a, err := netip.ParseAddr(strings.TrimSpace(b.Address))
	if err != nil || a.Zone() != "" {
		return cube.Errorf("address", "invalid address %q: want an IPv4 or IPv6 address", b.Address)
	}
	a = a.Unmap()
	b.Address = a.String()
	hw, err := net.ParseMAC(b.MAC)
	if err != nil || len(hw) != 6 {
		return cube.Errorf("mac", "invalid MAC address %q (the backend's, or its next hop's)", b.MAC)
	}
	b.MAC = hw.String()
	if b.Port == "" {
		return cube.Errorf("port", "required: the cube port the backend is reached through")
	}
	if b.Weight == nil {
		one := uint32(1)
		b.Weight = &one
	}
	if *b.Weight == 0 || *b.Weight > MaxWeight {
		return cube.Errorf("weight", "%d: want 1..%d (to take a backend out, set state to draining or disabled)", *b.Weight, MaxWeight)
	}
	if b.State == "" {
		b.State = "active"
	}
	if _, ok := beStates[b.State]; !ok {
		return cube.Errorf("state", "unknown state %q (want active, draining or disabled)", b.State)
	}
	return nil
}

// sameFamily checks the backend's address is of its service VIP's family.
func (b *Backend) sameFamily(s *Service) error {
	a, err := netip.ParseAddr(b.Address)
	if err != nil {
		return cube.Errorf("address", "invalid address %q", b.Address)
	}
	if vip, err := netip.ParseAddr(s.VIP); err == nil && vip.Unmap().Is4() != a.Is4() {
		return cube.Unprocessable("address", "%s and the service's VIP %s are of different address families (NAT64 is the nat's job)", a, vip)
	}
	return nil
}

// against checks a backend against its cube and service.
func (b *Backend) against(c *cube.Cube, s *Service) error {
	if c.Port(b.Port) == nil {
		return cube.NotFound("port", "cube %s has no port %q", c.Name, b.Port)
	}
	if err := b.sameFamily(s); err != nil {
		return err
	}
	if b.TargetPort != 0 && s.Mode != "nat" {
		return cube.Conflict("target_port", "only NAT services rewrite the port (service %s is %s)", s.Key(), s.Mode)
	}
	if s.Mode == "tunnel" && tunnelSource(c.Port(b.Port), b.Address) == "" {
		fam := "IPv6"
		if a, err := netip.ParseAddr(b.Address); err == nil && a.Is4() {
			fam = "IPv4"
		}
		return cube.Conflict("port", "port %s has no %s address: a tunnel service's packets leave it encapsulated from that address (add one to the port)", b.Port, fam)
	}
	return nil
}

// tunnelSource is the outer source address of tunnel-mode packets to the
// backend at addr through port p: the port's first address of addr's family
// (the one the fast path's lb_ports holds), "" if it has none.
func tunnelSource(p *cube.Port, addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil || p == nil {
		return ""
	}
	for _, s := range p.Addresses {
		if pf, err := netip.ParsePrefix(s); err == nil && pf.Addr().Is4() == a.Is4() {
			return pf.Addr().String()
		}
	}
	return ""
}

var beStates = map[string]uint16{"active": beActive, "draining": beDraining, "disabled": 0}

// BackendKey is the key of a backends-table entry: "service/name".
func (b *Backend) BackendKey() string { return b.Service + "/" + b.Name }

// Validate checks a backends-table entry.
func (b *Backend) Validate(c *cube.Cube) error {
	if b.Service == "" {
		return cube.Errorf("service", "required: the service key, vip:protocol:port")
	}
	a, proto, port, err := ParseServiceKey(b.Service)
	if err != nil {
		return cube.Errorf("service", "%v", err)
	}
	b.Service = fmt.Sprintf("%s:%s:%d", a.Unmap(), proto, port)
	if err := b.syntax(); err != nil {
		return err
	}
	s := findService(c, b.Service)
	if s == nil {
		return cube.NotFound("service", "cube %s has no service %s", c.Name, b.Service)
	}
	if err := b.against(c, s); err != nil {
		return err
	}
	for _, o := range s.Backends {
		if o.Name == b.Name {
			return cube.Conflict("name", "service %s already has a backend %q", b.Service, b.Name)
		}
		if o.Address == b.Address {
			return cube.Conflict("address", "%s is already backend %s of %s", b.Address, o.Name, b.Service)
		}
	}
	for _, o := range tableBackends(c, b.Service) {
		if o.Name != b.Name && o.Address == b.Address {
			return cube.Conflict("address", "%s is already backend %s of %s", b.Address, o.Name, b.Service)
		}
	}
	return nil
}

// findService decodes (without validating) the service stored under key.
func findService(c *cube.Cube, key string) *Service {
	raw, ok := c.Tables["services"][key]
	if !ok {
		return nil
	}
	var s Service
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	if s.Mode == "" {
		s.Mode = "dsr"
	}
	return &s
}

// tableBackends decodes (without validating) the backends-table entries of
// a service.
func tableBackends(c *cube.Cube, svc string) []Backend {
	var out []Backend
	for k, raw := range c.Tables["backends"] {
		if !strings.HasPrefix(k, svc+"/") {
			continue
		}
		var b Backend
		if json.Unmarshal(raw, &b) == nil {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// portMAC is the MAC a port uses: its own setting, or one derived from the
// cube and port names (locally administered).
func portMAC(c *cube.Cube, p *cube.Port) net.HardwareAddr {
	if hw, err := net.ParseMAC(p.MAC); err == nil && len(hw) == 6 {
		return hw
	}
	h := fnv.New64a()
	h.Write([]byte(c.Name + ":" + p.Name))
	s := h.Sum64()
	return net.HardwareAddr{0x02, byte(s >> 32), byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}
}

var servicesTable = cube.Table{
	Name: "services",
	Doc:  "Virtual services, keyed vip:protocol:port, with mode, Maglev table size and (optionally) backends.",
	Item: &Service{},
	Key:  func(v any) string { return v.(*Service).Key() },
	Max:  MaxServices,
}

var backendsTable = cube.Table{
	Name: "backends",
	Doc:  "Backends added to services one by one, keyed service/name.",
	Item: &TableBackend{},
	Key:  func(v any) string { return v.(*TableBackend).BackendKey() },
	Max:  MaxBackends,
}

// Type is the lb NF type.
var Type = &cube.Type{
	Name: "lb",
	Description: "L4 load balancer for IPv4 and IPv6 TCP/UDP services: weighted backends by Maglev consistent hashing, " +
		"per-flow affinity, DSR (MAC rewrite or IP-in-IP tunnel) or NAT mode, backends added/drained/disabled live.",
	Hooks:  []datapath.Hook{datapath.XDP, datapath.TC},
	Object: cube.HookObjects(objects, "bpf/lb"),
	Config: &Config{},
	Tables: []cube.Table{servicesTable, backendsTable},
	Views: []cube.View{
		{Name: "services", Doc: "Services and their backends: state, weight, Maglev share, flows, packets, bytes.", Item: &ServiceStatus{},
			List: func(h cube.Handle, c *cube.Cube) (any, error) { return Services(h, c) }},
		{Name: "connections", Doc: "Flows in the connection table (at most 10000 listed).", Item: &Connection{}, List: listConns, Unlocked: true},
		lbCounters.View("Packets forwarded, NAT replies, ARP/NDP replies, no backend, unknown traffic, tunnel-mode packets dropped unencapsulated (VLAN-tagged, no port address, no room)."),
	},
	Actions: []cube.Action{
		{Name: "flush_connections", Doc: "Forget every flow: next packets are placed by the Maglev tables again.", Do: flushConns},
		lbCounters.ResetAction("Zero the cube's and the backends' counters.", resetBackends),
	},
	New: newController,
}

func init() { cube.Register(Type) }
