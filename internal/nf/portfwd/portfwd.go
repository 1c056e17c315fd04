// Package portfwd is the portfwd NF: each in-port forwards to one out-port,
// optionally rewriting the MAC addresses, or drops, passes the frame to the
// Linux stack, or punts it to the slow path. It is the simplest useful cube
// (the PortFWD baseline of P4 VNF studies) and exercises every verdict.
package portfwd

import (
	"embed"
	"net"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/schema"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// Rule is one row of the forwarding table, keyed by its in-port.
type Rule struct {
	InPort string `json:"in_port" format:"name"`
	// Action: forward (default), drop, pass (to the Linux stack) or punt
	// (to the slow path).
	Action  string `json:"action,omitempty" enum:"forward|drop|pass|punt"`
	OutPort string `json:"out_port,omitempty" format:"name"`
	SrcMAC  string `json:"src_mac,omitempty" format:"mac"`
	DstMAC  string `json:"dst_mac,omitempty" format:"mac"`
}

// RefineSchema: forward takes an out_port and may rewrite MACs; the other
// actions take neither.
func (*Rule) RefineSchema(s *schema.Schema) {
	s.AnyOf = []*schema.Schema{
		schema.Branch([]string{"out_port"}, map[string]*schema.Schema{"action": {Type: "string", Enum: []string{"forward"}}}),
		schema.Branch([]string{"action"}, map[string]*schema.Schema{"action": {Type: "string", Enum: []string{"drop", "pass", "punt"}},
			"out_port": schema.Absent(), "src_mac": schema.Absent(), "dst_mac": schema.Absent()}),
	}
}

var actions = map[string]uint16{"forward": 0, "drop": 1, "pass": 2, "punt": 3}

// Validate checks the rule against the cube's ports.
func (r *Rule) Validate(c *cube.Cube) error {
	if r.Action == "" {
		r.Action = "forward"
	}
	if _, ok := actions[r.Action]; !ok {
		return cube.Errorf("action", "unknown action %q (want forward, drop, pass or punt)", r.Action)
	}
	if r.Action == "forward" && r.OutPort == "" {
		return cube.Errorf("out_port", "required for action forward")
	}
	if r.Action != "forward" && (r.OutPort != "" || r.SrcMAC != "" || r.DstMAC != "") {
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
	if c.Port(r.InPort) == nil {
		return cube.NotFound("in_port", "cube %s has no port %q", c.Name, r.InPort)
	}
	if r.OutPort != "" && c.Port(r.OutPort) == nil {
		return cube.NotFound("out_port", "cube %s has no port %q", c.Name, r.OutPort)
	}
	return nil
}

var rulesTable = cube.Table{
	Name: "rules",
	Doc:  "Forwarding rules, one per in-port.",
	Item: &Rule{},
	Key:  func(v any) string { return v.(*Rule).InPort },
	Max:  datapath.MaxPorts,
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
