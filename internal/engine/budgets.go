package engine

// What a tenant may send through the slow path, both ways: each cube's
// punt budget in the kernel (datapath.PuntBudget), and the frames a tenant
// injects through the API (injects_per_second).

import (
	"fmt"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/ratelimit"
	"github.com/edgenf/edgenf/internal/tenant"
)

// puntBudget is the punt budget of a cube of owner ("": the
// administrator's, Config.PuntRate and PuntBurst).
func (e *Engine) puntBudget(owner string) datapath.PuntBudget {
	if owner == "" {
		return datapath.NewPuntBudget(uint64(e.cfg.PuntRate), uint64(e.cfg.PuntBurst), e.cfg.PuntRate == 0)
	}
	rate, burst := e.tenants.limit(owner, tenant.PuntsPerSecond), e.tenants.limit(owner, tenant.PuntBurst)
	return datapath.NewPuntBudget(uint64(rate), uint64(burst), false)
}

// writePuntBudget gives a loaded cube the punt budget of owner, unless it
// has that one already.
func (e *Engine) writePuntBudget(l *live, owner string) error {
	b := e.puntBudget(owner)
	if l.puntSet && l.punt == b {
		return nil
	}
	if err := l.dc.SetPuntBudget(b); err != nil {
		return fmt.Errorf("cube %s: punt budget: %w", l.dc.Name, err)
	}
	l.punt, l.puntSet = b, true
	return nil
}

// rewritePuntBudgets gives the cubes of a tenant whose record changed
// their new budget.
func (e *Engine) rewritePuntBudgets(owner string) {
	for _, l := range e.cubes {
		if l.c == nil || l.c.Tenant != owner || l.down != "" {
			continue
		}
		if err := e.writePuntBudget(l, owner); err != nil {
			e.log.Warn("punt budget not changed", "cube", l.dc.Name, "tenant", owner, "err", err)
		}
	}
}

// takeInject takes one of who's injects_per_second tokens, without the
// engine's lock: a tenant's storm of packet-outs is refused before it
// waits for the lock every other tenant's calls need. The administrator
// has no limit.
func (e *Engine) takeInject(who tenant.Actor) error {
	if who.IsAdmin() {
		return nil
	}
	rate := e.tenants.limitNow(who.Name(), tenant.InjectsPerSecond)
	burst := e.tenants.limitNow(who.Name(), tenant.InjectBurst)
	wait := e.injects.Take(who.Name(), rate, burst)
	switch {
	case wait == 0:
		return nil
	case wait == ratelimit.Forever:
		return cube.TooMany("quota."+tenant.InjectsPerSecond, "over quota %s: limit 0, the tenant may not send frames into the datapath", tenant.InjectsPerSecond)
	}
	return cube.TooMany("quota."+tenant.InjectsPerSecond, "over quota %s: limit %d frames a second in bursts of at most %d (%s); the next may be sent in %s",
		tenant.InjectsPerSecond, rate, burst, tenant.InjectBurst, wait.Round(time.Millisecond))
}
