package scenarios

// The set-up the scenarios share: a path and an engine, a topology applied
// before the sink takes b1, a router.

import (
	"encoding/json"
	"fmt"
	"net"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/vishvananda/netlink"
)

// The set-up the scenarios share: a path, an engine, a router.

// enginePath is the standard path with an engine to put cubes on it: at
// TC, a1 gets an XDP pass-through (it accepts the generator's redirected
// frames only with an XDP program; they then reach TCX ingress as skbs).
func enginePath(e *scenario.Env, hook datapath.Hook) (*scenario.Path, *engine.Engine, string, error) {
	p, err := e.NewPath(false)
	if err != nil {
		return nil, nil, "", err
	}
	if hook == datapath.TC {
		if err := p.AttachXDP(e.Objs.Pass, p.A1Idx); err != nil {
			return nil, nil, "", err
		}
	}
	eng, root, err := benchEngine(e)
	if err != nil {
		return nil, nil, "", err
	}
	return p, eng, root, nil
}

// freeSink removes the XDP pass-through the engine put on b1 (the far end
// of b0, which it redirects into): the harness attaches its sink there, which
// serves the same purpose.
func freeSink(p *scenario.Path) error {
	lk, err := netlink.LinkByIndex(p.B1Idx)
	if err != nil {
		return err
	}
	if x := lk.Attrs().Xdp; x != nil && x.Attached {
		return netlink.LinkSetXdpFd(lk, -1)
	}
	return nil
}

// addRouter adds router r between a1 (port in, the generator's side) and
// b0 (port out), with the next hop's MAC (b1's) pinned: the router of the
// router, NAT and firewall scenarios.
func addRouter(tp *cube.Topology, r string, hook datapath.Hook, cfg json.RawMessage, p *scenario.Path) error {
	if err := tp.AddCube(&cube.Cube{Name: r, Type: "router", Hook: hook, Config: cfg, Ports: []cube.Port{
		{Name: "in", Index: 0, Peer: p.A1, MAC: routerInMAC, Addresses: []string{scenario.A1IP}},
		{Name: "out", Index: 1, Peer: p.B0, Addresses: []string{scenario.B0IP}},
	}}); err != nil {
		return err
	}
	_, err := tp.PutEntry(r, "arp", json.RawMessage(fmt.Sprintf(`{"ip":%q,"mac":%q}`, scenario.NextHop, p.B1MAC)))
	return err
}

// build applies fn to the engine, frees b1 for the harness's sink (after
// the last change: the engine puts its pass-through back on every change)
// and returns the path's topology, whose frames go to dst.
func build(eng *engine.Engine, p *scenario.Path, dst net.HardwareAddr, fn func(tp *cube.Topology) error) (*scenario.Topology, error) {
	if err := eng.Update(fn); err != nil {
		return nil, err
	}
	if err := freeSink(p); err != nil {
		return nil, err
	}
	return p.Topology(dst), nil
}
