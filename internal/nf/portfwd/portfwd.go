// Package portfwd is the portfwd NF: each in-port forwards to one out-port,
// optionally rewriting the MAC addresses, or drops, passes the frame to the
// Linux stack, or punts it to the slow path. It is the simplest useful cube
// (the PortFWD baseline of P4 VNF studies) and exercises every verdict.
package portfwd

import (
	"embed"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// Rule is one row of the forwarding table, keyed by its in-port.
type Rule struct {
	InPort string `json:"in_port"`
	// Action: forward (default), drop, pass (to the Linux stack) or punt
	// (to the slow path).
	Action  string `json:"action,omitempty"`
	OutPort string `json:"out_port,omitempty"`
	SrcMAC  string `json:"src_mac,omitempty"`
	DstMAC  string `json:"dst_mac,omitempty"`
}

var actions = map[string]uint16{"forward": 0, "drop": 1, "pass": 2, "punt": 3}

// Validate checks the rule against the cube's ports.
func (r *Rule) Validate(c *cube.Cube) error {
	if c.Port(r.InPort) == nil {
		return cube.NotFound("in_port", "cube %s has no port %q", c.Name, r.InPort)
	}
	if r.Action == "" {
		r.Action = "forward"
	}
	if _, ok := actions[r.Action]; !ok {
		return cube.Errorf("action", "unknown action %q (want forward, drop, pass or punt)", r.Action)
	}
	if r.Action == "forward" {
		if r.OutPort == "" {
			return cube.Errorf("out_port", "required for action forward")
		}
		if c.Port(r.OutPort) == nil {
			return cube.NotFound("out_port", "cube %s has no port %q", c.Name, r.OutPort)
		}
	} else if r.OutPort != "" || r.SrcMAC != "" || r.DstMAC != "" {
		return cube.Errorf("out_port", "only action forward takes out_port, src_mac, dst_mac")
	}
	for field, m := range map[string]string{"src_mac": r.SrcMAC, "dst_mac": r.DstMAC} {
		if m == "" {
			continue
		}
		if hw, err := net.ParseMAC(m); err != nil || len(hw) != 6 {
			return cube.Errorf(field, "invalid MAC address %q", m)
		}
	}
	return nil
}

// entry mirrors struct pf_entry.
type entry struct {
	OutPort uint32
	Flags   uint16
	Action  uint16
	Src     [6]byte
	Dst     [6]byte
}

const (
	flagValid  = 1
	flagSetSrc = 2
	flagSetDst = 4
)

func (r *Rule) entry(c *cube.Cube) entry {
	e := entry{Flags: flagValid, Action: actions[r.Action]}
	if p := c.Port(r.OutPort); p != nil {
		e.OutPort = uint32(p.Index)
	}
	if hw, err := net.ParseMAC(r.SrcMAC); err == nil {
		e.Flags |= flagSetSrc
		copy(e.Src[:], hw)
	}
	if hw, err := net.ParseMAC(r.DstMAC); err == nil {
		e.Flags |= flagSetDst
		copy(e.Dst[:], hw)
	}
	return e
}

// PuntedFrame is a frame the slow path received from the cube.
type PuntedFrame struct {
	Time   time.Time `json:"time"`
	InPort int       `json:"in_port"`
	Length int       `json:"length"`
	Head   string    `json:"head"` // first bytes, hex
}

const keepPunted = 32

type controller struct {
	mu     sync.Mutex
	punted []PuntedFrame
}

var rulesTable = cube.Table{
	Name: "rules",
	Doc:  "Forwarding rules, one per in-port.",
	Item: &Rule{},
	Key:  func(v any) string { return v.(*Rule).InPort },
	Max:  datapath.MaxPorts,
}

// Sync rewrites the whole forwarding table: at most 64 entries.
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	m, err := h.Map("pf_table")
	if err != nil {
		return err
	}
	rules, err := rulesTable.Entries(c)
	if err != nil {
		return err
	}
	want := make([]entry, datapath.MaxPorts)
	for _, v := range rules {
		r := v.(*Rule)
		want[c.Port(r.InPort).Index] = r.entry(c)
	}
	for i, e := range want {
		if err := m.Put(uint32(i), e); err != nil {
			return fmt.Errorf("pf_table[%d]: %w", i, err)
		}
	}
	return nil
}

// HandlePunt keeps the last frames punted by rules with action punt.
func (ctl *controller) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	head := p.Frame
	if len(head) > 64 {
		head = head[:64]
	}
	ctl.punted = append(ctl.punted, PuntedFrame{Time: time.Now(), InPort: p.InPort, Length: p.PktLen, Head: fmt.Sprintf("%x", head)})
	if len(ctl.punted) > keepPunted {
		ctl.punted = ctl.punted[len(ctl.punted)-keepPunted:]
	}
}

func (ctl *controller) listPunted() []PuntedFrame {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	return append([]PuntedFrame{}, ctl.punted...)
}

// Type is the portfwd NF type.
var Type = &cube.Type{
	Name:        "portfwd",
	Description: "Forward by in-port to out-port, with optional MAC rewrite; or drop, pass to Linux, punt to the slow path.",
	Hooks:       []datapath.Hook{datapath.XDP, datapath.TC},
	Object:      cube.HookObjects(objects, "bpf/portfwd"),
	Tables:      []cube.Table{rulesTable},
	Views: []cube.View{{
		Name: "punted",
		Doc:  "The last frames punted to the slow path.",
		Item: &PuntedFrame{},
		List: func(h cube.Handle, c *cube.Cube) (any, error) {
			return cube.ControllerOf[*controller](h).listPunted(), nil
		},
	}},
	New: func() cube.Controller { return &controller{} },
}

func init() { cube.Register(Type) }
