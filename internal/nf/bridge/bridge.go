package bridge

import (
	"embed"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/schema"
)

// Config holds the bridge's settings.
type Config struct {
	// AgingTime is how long (seconds) a learned MAC stays in the FDB
	// without traffic from it. 0 means the default, 300.
	AgingTime int `json:"aging_time,omitempty" minimum:"0" maximum:"1000000"`
}

const (
	defaultAging = 300
	maxAging     = 1000000
	// FDBCapacity is the number of MACs (learned and static) the FDB holds.
	FDBCapacity = 65536
	// MaxStatic bounds the static FDB entries.
	MaxStatic = 16384
)

func (c Config) aging() int {
	if c.AgingTime == 0 {
		return defaultAging
	}
	return c.AgingTime
}

// Validate checks the settings and every port's VLAN settings.
func (cfg *Config) Validate(c *cube.Cube) error {
	if cfg.AgingTime < 0 || cfg.AgingTime > maxAging {
		return cube.Errorf("aging_time", "%d out of range 1..%d seconds (0: default %d)", cfg.AgingTime, maxAging, defaultAging)
	}
	for _, p := range c.Ports {
		if _, err := portVLANs(&p); err != nil {
			return err
		}
	}
	return nil
}

// PortConfig is a bridge port's VLAN settings.
type PortConfig struct {
	// Mode is "access" (default: one VLAN, untagged) or "trunk" (tagged
	// VLANs, plus optionally one native VLAN sent and received untagged).
	Mode string `json:"mode,omitempty" enum:"access|trunk"`
	// VLAN is an access port's VLAN (default 1).
	VLAN int `json:"vlan,omitempty" minimum:"0" maximum:"4094"`
	// AllowedVLANs lists a trunk's tagged VLANs: "10,20,100-199"; empty
	// means all (1-4094).
	AllowedVLANs string `json:"allowed_vlans,omitempty" format:"vlan-list"`
	// NativeVLAN is a trunk's untagged VLAN (0: untagged frames are
	// dropped).
	NativeVLAN int `json:"native_vlan,omitempty" minimum:"0" maximum:"4094"`
}

// RefineSchema: an access port has a vlan, a trunk allowed_vlans and a
// native_vlan.
func (*PortConfig) RefineSchema(s *schema.Schema) {
	s.AnyOf = []*schema.Schema{
		schema.Branch(nil, map[string]*schema.Schema{"mode": {Type: "string", Enum: []string{"access"}},
			"allowed_vlans": schema.Absent(), "native_vlan": {Type: "integer", Minimum: schema.Num(0), Maximum: schema.Num(0)}}),
		schema.Branch([]string{"mode"}, map[string]*schema.Schema{"mode": {Type: "string", Enum: []string{"trunk"}},
			"vlan": {Type: "integer", Minimum: schema.Num(0), Maximum: schema.Num(0)}}),
	}
}

// vlanSet is what a port carries: pvid (untagged VLAN, 0 none) and the
// tagged VLANs.
type vlanSet struct {
	pvid   int
	tagged []bool // index: VLAN id
}

func (v vlanSet) member(vid int) bool { return vid == v.pvid || v.tagged[vid] }

func checkVID(field string, v int) error {
	if v < 1 || v > 4094 {
		return cube.Errorf(field, "VLAN %d out of range 1..4094", v)
	}
	return nil
}

// portVLANs decodes and checks a port's VLAN settings.
func portVLANs(p *cube.Port) (vlanSet, error) {
	field := fmt.Sprintf("ports[%s].config", p.Name)
	pcv, err := cube.Decode(field, p.Config, &PortConfig{})
	if err != nil {
		return vlanSet{}, err
	}
	pc := pcv.(*PortConfig)
	vs := vlanSet{tagged: make([]bool, 4096)}
	switch pc.Mode {
	case "", "access":
		if pc.AllowedVLANs != "" || pc.NativeVLAN != 0 {
			return vs, cube.Errorf(field+".mode", "allowed_vlans and native_vlan are for trunk ports; an access port has one vlan")
		}
		vs.pvid = 1
		if pc.VLAN != 0 {
			if err := checkVID(field+".vlan", pc.VLAN); err != nil {
				return vs, err
			}
			vs.pvid = pc.VLAN
		}
	case "trunk":
		if pc.VLAN != 0 {
			return vs, cube.Errorf(field+".vlan", "a trunk port has allowed_vlans and native_vlan, not vlan")
		}
		if pc.NativeVLAN != 0 {
			if err := checkVID(field+".native_vlan", pc.NativeVLAN); err != nil {
				return vs, err
			}
			vs.pvid = pc.NativeVLAN
		}
		if err := parseVLANList(field+".allowed_vlans", pc.AllowedVLANs, vs.tagged); err != nil {
			return vs, err
		}
		if vs.pvid != 0 {
			vs.tagged[vs.pvid] = false // the native VLAN is untagged
		}
	default:
		return vs, cube.Errorf(field+".mode", "unknown mode %q (want access or trunk)", pc.Mode)
	}
	return vs, nil
}

// parseVLANList reads "10,20,30-40" ("" = all) into set.
func parseVLANList(field, s string, set []bool) error {
	if strings.TrimSpace(s) == "" {
		for v := 1; v <= 4094; v++ {
			set[v] = true
		}
		return nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return cube.Errorf(field, "bad VLAN %q in %q: want ids and ranges like 10,20,30-40", part, s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
				return cube.Errorf(field, "bad VLAN range %q in %q", part, s)
			}
		}
		if err := checkVID(field, a); err != nil {
			return err
		}
		if err := checkVID(field, b); err != nil {
			return err
		}
		if b < a {
			return cube.Unprocessable(field, "VLAN range %q runs backwards", part)
		}
		for v := a; v <= b; v++ {
			set[v] = true
		}
	}
	return nil
}

// FDBEntry is a static FDB entry: frames to MAC in VLAN go out of Port.
type FDBEntry struct {
	MAC string `json:"mac" format:"mac-unicast"`
	// VLAN defaults to the port's untagged VLAN.
	VLAN int    `json:"vlan,omitempty" minimum:"0" maximum:"4094" doc:"the VLAN, 1..4094; 0 or absent: the port's untagged VLAN"`
	Port string `json:"port" format:"name"`
}

func fdbKey(v any) string {
	e := v.(*FDBEntry)
	return fmt.Sprintf("%s/%d", e.MAC, e.VLAN)
}

// Validate checks the entry against the cube's ports and VLANs.
func (e *FDBEntry) Validate(c *cube.Cube) error {
	hw, err := net.ParseMAC(e.MAC)
	if err != nil || len(hw) != 6 {
		return cube.Errorf("mac", "invalid MAC address %q", e.MAC)
	}
	if hw[0]&1 != 0 {
		return cube.Errorf("mac", "%s is a group address; static entries are for unicast MACs", e.MAC)
	}
	e.MAC = hw.String()
	if e.VLAN != 0 {
		if err := checkVID("vlan", e.VLAN); err != nil {
			return err
		}
	}
	p := c.Port(e.Port)
	if p == nil {
		return cube.NotFound("port", "cube %s has no port %q", c.Name, e.Port)
	}
	vs, err := portVLANs(p)
	if err != nil {
		return cube.Conflict("port", "port %s: %v", e.Port, err)
	}
	if e.VLAN == 0 {
		if vs.pvid == 0 {
			return cube.Conflict("vlan", "required: port %s has no untagged VLAN", e.Port)
		}
		e.VLAN = vs.pvid
	}
	if !vs.member(e.VLAN) {
		return cube.Conflict("vlan", "port %s does not carry VLAN %d", e.Port, e.VLAN)
	}
	return nil
}

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

var staticTable = cube.Table{
	Name: "fdb",
	Doc:  "Static FDB entries: MAC (in a VLAN) → port. They never age and are never moved by learning.",
	Item: &FDBEntry{},
	Key:  fdbKey,
	Max:  MaxStatic,
}

// Type is the bridge NF type.
var Type = &cube.Type{
	Name:        "bridge",
	Description: "802.1Q learning bridge: MAC learning and aging in the fast path, static FDB, access/trunk ports, in-kernel flooding per VLAN.",
	Hooks:       []datapath.Hook{datapath.XDP, datapath.TC},
	Object:      cube.HookObjects(objects, "bpf/bridge"),
	Config:      &Config{},
	PortConfig:  &PortConfig{},
	Tables:      []cube.Table{staticTable},
	Views: []cube.View{
		{Name: "fdb", Doc: "The forwarding database: learned and static MACs per VLAN, with their port and age.", Item: &FDBRow{}, List: listFDB, Unlocked: true},
		{Name: "status", Doc: "FDB occupancy and the bridge's counters (learning failures when full, MAC moves, floods, VLAN drops).", Item: &Status{}, Object: true,
			List: cube.ListOn((*controller).status)},
	},
	Actions: []cube.Action{{Name: "fdb_flush", Doc: "Remove learned FDB entries (all, or of one port and/or VLAN).", Args: &FlushArgs{}, Do: flushFDB}},
	New:     func() cube.Controller { return &controller{} },
}

func init() { cube.Register(Type) }
