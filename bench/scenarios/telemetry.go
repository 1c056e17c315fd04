package scenarios

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/api"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
)

func init() {
	for _, n := range []int{1000, 3000, 10000} {
		n := n
		scenario.Register(scenario.Scenario{
			Name: fmt.Sprintf("metrics-%d", n), Group: "scale", Quick: n == 1000, Order: n + 1, Param: float64(n),
			Doc: fmt.Sprintf("%d two-port portfwd cubes in edgenfd's engine (100 tenants), traffic through the last one, XDP; "+
				"/metrics scraped through the API over loopback, and the API's latency (GET a cube's stats) idle and during back-to-back scrapes", n),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				if e.Quick && n != 1000 {
					return nil, scenario.ErrSkip
				}
				return setupMetrics(e, n)
			},
		})
	}
}

const metricsToken = "bench-admin-token-0123456789"

// setupMetrics loads n cubes through the engine, the last one forwarding
// a1 → b0, serves the API on loopback, and measures scrapes of /metrics
// and the API's latency beside them. Then it closes the engine, as a
// stopped daemon leaves its cubes forwarding: the harness measures the
// traffic with the next scenarios of the group set up too, and the
// engine's descriptors (five per cube: program and maps) would add up.
func setupMetrics(e *scenario.Env, n int) (*scenario.Topology, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return nil, err
	}
	if need := uint64(6*n + 2000); lim.Cur < need {
		raised := unix.Rlimit{Cur: need, Max: max(lim.Max, need)}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err != nil {
			return nil, fmt.Errorf("edgenfd holds 5 file descriptors per cube: %d cubes need %d, the limit is %d and cannot be raised here (%v)", n, need, lim.Max, err)
		}
	}
	p, err := e.NewPath(false)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "edgenf-bench-")
	if err != nil {
		return nil, err
	}
	cfg := engine.Config{PinRoot: filepath.Join("/sys/fs/bpf", e.Lab.Prefix()+"-"+e.ID()), StateFile: filepath.Join(dir, "state.json"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e.Defer(func() { engine.DestroyAt(cfg); os.RemoveAll(dir) })
	eng, err := engine.Open(cfg)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	rule := json.RawMessage(`{"in_port":"p0","out_port":"p1"}`)
	t0 := time.Now()
	err = eng.Update(func(t *cube.Topology) error {
		for i := range n {
			c := &cube.Cube{Name: fmt.Sprintf("pf%d", i), Type: "portfwd", Hook: datapath.XDP, Tenant: fmt.Sprintf("t%d", i%100),
				Ports:  []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}},
				Tables: map[string]map[string]json.RawMessage{"rules": {"p0": rule}}}
			if i == n-1 {
				c.Ports[0].Peer, c.Ports[1].Peer = p.A1, p.B0
			}
			if err := t.AddCube(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	created := time.Since(t0)
	if err := freeSink(p); err != nil {
		return nil, err
	}
	srv := httptest.NewServer(api.New(eng, api.NewTokens(api.Token{Token: metricsToken})))
	defer srv.Close()

	reps := 10
	if e.Quick {
		reps = 3
	}
	t := p.Topology(p.B1MAC)
	t.Info["cubes"] = fmt.Sprint(n)
	t.Info["create"] = fmt.Sprintf("%v (one change through the engine)", created.Round(time.Millisecond))
	for _, enc := range []string{"gzip", "identity"} {
		var took []time.Duration
		var size int
		for range reps {
			d, sz, err := scrape(srv.URL, enc)
			if err != nil {
				return nil, err
			}
			took, size = append(took, d), sz
		}
		slices.Sort(took)
		t.Info["scrape, "+enc] = fmt.Sprintf("%.1f ms median (%.1f–%.1f), %.1f MB", ms(took[len(took)/2]), ms(took[0]), ms(took[len(took)-1]), float64(size)/1e6)
	}
	idle, err := apiLatency(srv.URL, n, reps*20, nil)
	if err != nil {
		return nil, err
	}
	t.Info["API latency idle"] = idle
	var scrapes atomic.Int64
	busy, err := apiLatency(srv.URL, n, reps*20, func(stop <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := scrape(srv.URL, "gzip"); err == nil {
				scrapes.Add(1)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	t.Info["API latency during scrapes"] = fmt.Sprintf("%s (%d scrapes meanwhile)", busy, scrapes.Load())
	return t, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// scrape GETs /metrics as Prometheus does (or without compression).
func scrape(base, encoding string) (time.Duration, int, error) {
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+metricsToken)
	req.Header.Set("Accept-Encoding", encoding)
	t0 := time.Now()
	resp, err := http.DefaultTransport.RoundTrip(req) // no transparent decompression
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("/metrics: HTTP %d", resp.StatusCode)
	}
	return time.Since(t0), int(n), err
}

// apiLatency times count sequential GETs of one cube's stats (they take
// the engine's lock), with load running beside them if not nil.
func apiLatency(base string, n, count int, load func(stop <-chan struct{})) (string, error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if load != nil {
		wg.Add(1)
		go func() { defer wg.Done(); load(stop) }()
		time.Sleep(50 * time.Millisecond) // a scrape under way
	}
	defer func() { close(stop); wg.Wait() }()
	var took []time.Duration
	for i := range count {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v1/cubes/pf%d/stats", base, i%n), nil)
		req.Header.Set("Authorization", "Bearer "+metricsToken)
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return "", fmt.Errorf("GET stats: HTTP %d", resp.StatusCode)
		}
		took = append(took, time.Since(t0))
		time.Sleep(2 * time.Millisecond)
	}
	slices.Sort(took)
	q := func(f float64) float64 { return ms(took[int(f*float64(len(took)-1))]) }
	return fmt.Sprintf("p50 %.2f ms, p99 %.2f ms, max %.2f ms", q(0.5), q(0.99), q(1)), nil
}
