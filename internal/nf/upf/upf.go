// Package upf is the upf NF: a 5G user plane function. Its fast path
// (bpf/upf.bpf.c) decapsulates uplink GTP-U from gNBs on n3, encapsulates
// downlink traffic from the data network on n6, and relays tunnels on n9,
// applying each PFCP session's PDRs, FARs, QERs and URRs from maps. Its
// control plane is the PFCP agent (internal/pfcp/agent) when the cube has
// an N4 address, and the sessions table of the API in any case. The
// controller turns sessions into kernel rules, keeps usage accounting and
// reports, buffers downlink packets, resolves next hops and answers GTP-U
// path management (echo, error indication, end marker).
package upf

import (
	"embed"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// Table names.
const (
	TableSessions     = "sessions"
	TableAssociations = "associations"
)

var sessionsTable = cube.Table{
	Name: TableSessions,
	Doc: "PFCP sessions, keyed by the UPF's SEID: PDRs, FARs, QERs, URRs and BARs. Written by the PFCP agent " +
		"when an SMF establishes, modifies and deletes sessions, or through the API for static set-ups.",
	Item: &model.Session{},
	Key:  func(v any) string { return v.(*model.Session).Key() },
	Max:  model.MaxMaxSessions,
	// a cube holds as many as its maps were sized for
	MaxOf: func(c *cube.Cube) int {
		cfg, err := model.DecodeConfig(c)
		if err != nil {
			return 0 // validation reports it
		}
		return int(cfg.Sessions())
	},
}

var associationsTable = cube.Table{
	Name: TableAssociations,
	Doc:  "PFCP associations with SMFs (kept by the PFCP agent), keyed by the SMF's Node ID.",
	Item: &model.Association{},
	Key:  func(v any) string { return v.(*model.Association).Node },
	Max:  model.MaxAssociations,
}

// Type is the upf NF type.
var Type = &cube.Type{
	Name: "upf",
	Description: "5G user plane function: GTP-U decapsulation and encapsulation (PDU Session Container, QFI), " +
		"PFCP PDRs with SDF filters, FARs (forward, drop, buffer, notify), QERs (gates, MBR), URRs (volume, " +
		"thresholds, quotas, usage reports); ports n3 (gNBs), n6 (data network), n9 (other UPFs); driven by " +
		"an SMF over PFCP (N4) or through the API.",
	Hooks:      []datapath.Hook{datapath.XDP, datapath.TC},
	Object:     cube.HookObjects(objects, "bpf/upf"),
	Config:     &model.Config{},
	PortConfig: &model.PortConfig{},
	PortNames:  []string{model.PortN3, model.PortN6, model.PortN9},
	// (index 63 is where the daemon releases buffered frames)
	PortIndexMax: model.ReleasePort - 1,
	Tables:       []cube.Table{sessionsTable, associationsTable},
	Views:        views,
	Actions:      actions,
	New:          newController,
	SizeMaps:     sizeMaps,
}

func init() { cube.Register(Type) }
