package scenarios

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/api"
	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/tenant"
	"golang.org/x/sys/unix"
)

// Entry-change throughput through the REST API, the control plane's hot
// path: with a tenant's token every change is checked against what the
// tenant owns and its table entry quota, and those checks must cost nothing
// measurable next to the administrator's token.

const (
	apiAdminToken  = "bench-admin-0123456789abcdef"
	apiTenantToken = "bench-tenant-0123456789abcdef"
	apiRounds      = 10
	apiPerRound    = 150 // add + delete pairs per token and round
)

// apiEntryRate serves the bench engine's API over loopback TCP and times
// adding and deleting one blacklist entry (two requests, keep-alive) in a
// tenant's ddos cube holding bulk other entries, alternately with the
// administrator's and the tenant's token; it reports both rates and their
// ratio in the scenario's notes.
func apiEntryRate(e *scenario.Env, eng *engine.Engine, t *scenario.Topology, bulk map[string]json.RawMessage) error {
	toks := api.NewTokens(api.Token{Token: apiAdminToken}, api.Token{Token: apiTenantToken, Tenant: "bench"})
	srv := httptest.NewServer(api.New(eng, toks))
	e.Defer(srv.Close)
	if _, err := eng.SetTenant(tenant.Tenant{Name: "bench", Quota: tenant.Quota{tenant.TableEntries: 1 << 20}}); err != nil {
		return err
	}
	name := "api" + e.ID()
	if err := eng.Update(func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: name, Type: "ddos", Hook: datapath.XDP, Tenant: "bench",
			Tables: map[string]map[string]json.RawMessage{"blacklist_src": bulk}})
	}); err != nil {
		return err
	}
	path := "/v1/cubes/" + name + "/tables/blacklist_src"
	change := func(cl *client.Client, i int) error {
		// above the bulk entries (which end in 198.19.135.x)
		prefix := fmt.Sprintf("198.19.%d.%d/32", 140+i>>8, i&0xff)
		if err := cl.Do("POST", path, map[string]string{"prefix": prefix}, nil); err != nil {
			return err
		}
		return cl.Do("DELETE", path+"/"+url.PathEscape(prefix), nil, nil)
	}
	clients := []*client.Client{client.New("", srv.URL, apiAdminToken), client.New("", srv.URL, apiTenantToken)}
	// Wall time, and the CPU time of the process (daemon and client: the
	// client's share is the same for both tokens), which other jobs on the
	// machine do not inflate.
	var wall, cpu [2]time.Duration
	for round := range apiRounds {
		for k, cl := range clients {
			t0, c0 := time.Now(), cpuTime()
			for i := range apiPerRound {
				if err := change(cl, (round*len(clients)+k)*apiPerRound+i); err != nil {
					return fmt.Errorf("API entry change: %w", err)
				}
			}
			wall[k] += time.Since(t0)
			cpu[k] += cpuTime() - c0
		}
	}
	n := float64(2 * apiRounds * apiPerRound)
	rate := func(d time.Duration) float64 { return n / d.Seconds() }
	perChange := func(d time.Duration) float64 { return float64(d.Microseconds()) / n }
	t.Info["API entry changes/s, admin vs tenant token"] = fmt.Sprintf("%.0f vs %.0f (ratio %.3f); CPU %.0f vs %.0f µs per change (ratio %.3f); %d-entry table",
		rate(wall[0]), rate(wall[1]), rate(wall[1])/rate(wall[0]), perChange(cpu[0]), perChange(cpu[1]), float64(cpu[0])/float64(cpu[1]), len(bulk))
	return nil
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
