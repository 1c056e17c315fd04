package upf

import (
	"net/netip"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/pfcp/agent"
)

// The controller's own goroutines: the PFCP agent of the cube's N4
// endpoint, started and restarted as the settings say.

type service struct {
	store cube.Store
	agent *agent.Agent
	// stopped: the cube is gone; no agent starts again.
	stopped bool
	// handle is the engine's handle during its calls into the controller
	// (nil between them).
	handle       cube.Handle
	errIndTokens float64
}

// Start implements cube.Service.
func (ctl *controller) Start(s cube.Store) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.store = s
}

// Close implements cube.Service: the agent stops.
func (ctl *controller) Close() {
	ctl.mu.Lock()
	a := ctl.agent
	ctl.agent, ctl.stopped = nil, true
	ctl.mu.Unlock()
	if a != nil {
		a.Stop()
	}
	ctl.drain.wg.Wait()
}

// syncService starts, restarts or updates the agent (ctl.mu held).
func (ctl *controller) syncService(c *cube.Cube, cfg *model.Config) error {
	if cfg.PFCP == nil || ctl.store == nil || ctl.stopped {
		if ctl.agent != nil {
			ctl.agent.Stop()
			ctl.agent = nil
		}
		return nil
	}
	listen := netip.AddrPortFrom(netip.MustParseAddr(cfg.PFCP.Address), cfg.PFCP.Port)
	acfg := agent.Config{
		Cube: c.Name, Listen: listen, Settings: cfg, Tunnels: map[string][2]netip.Addr{},
		Store: ctl.store, Datapath: ctl, Logf: logTo(ctl.handle),
	}
	for _, name := range []string{model.PortN3, model.PortN9} {
		if p, ok := ctl.ports[name]; ok {
			acfg.Tunnels[name] = [2]netip.Addr{p.v4.Addr(), p.v6.Addr()}
		}
	}
	if ctl.agent != nil && ctl.agent.Addr() == listen {
		ctl.agent.Update(acfg)
		return nil
	}
	rows, err := associationsTable.Entries(c)
	if err != nil {
		return err
	}
	for _, v := range rows {
		acfg.Associations = append(acfg.Associations, *v.(*model.Association))
	}
	a, err := agent.New(acfg)
	if err != nil {
		// (an address the machine does not hold, a port in use: the
		// machine's state)
		return cube.Conflict("config.pfcp", "%v", err)
	}
	if ctl.agent != nil {
		ctl.agent.Stop()
	}
	ctl.agent = a
	return nil
}

// logTo logs through the handle of the call that started the agent: its
// Logf only names the cube, and the agent logs between the engine's calls.
func logTo(h cube.Handle) func(string, ...any) {
	if h == nil {
		return nil
	}
	return h.Logf
}
