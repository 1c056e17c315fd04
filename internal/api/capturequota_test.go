package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/cube"
	_ "github.com/edgenf/edgenf/internal/nf/slicer"
)

// A capture at a slice is made with the administrator's rights (the
// slicer is the administrator's) but its cube is the tenant's, so the API
// checks the tenant's cubes quota for it, as the engine does for the
// tenant's own cubes. Many captures and cube creations started at once
// must not each see the count before the others and all go through: the
// tenant never holds more cubes than its quota, and exactly as many start
// as it leaves room for.
func TestSliceCapturesAndCubesStartedAtOnceKeepTheQuota(t *testing.T) {
	const quota, tries = 4, 12
	url, eng := tenantServer(t)
	admin, t2 := client.New("", url, adminTok), client.New("", url, t2Tok)
	if err := admin.Do("PUT", "/v1/tenants/t2", map[string]any{"quota": map[string]int64{"cubes": quota, "concurrent_requests": 4 * tries}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := t2.Do("POST", "/v1/cubes", map[string]any{"name": "a2", "type": "portfwd", "hook": "tc", "ports": []map[string]any{{"name": "p0"}, {"name": "p1"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do("POST", "/v1/cubes", map[string]any{"name": "s1", "type": "slicer", "hook": "tc", "ports": []map[string]any{{"name": "up"}}, "config": map[string]any{"uplink": "up"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do("POST", "/v1/cubes/s1/tables/slices", map[string]any{"name": "mine", "id": 1, "tenant": "t2", "chain": "a2:p0"}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		started []io.ReadCloser
		refusal []error
	)
	ready := make(chan struct{})
	made := 0 // cubes the tenant made itself
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			var rd io.ReadCloser
			var err error
			if i%2 == 0 {
				rd, err = t2.Stream(ctx, "/v1/captures", map[string]any{"slice": "s1/mine", "duration": "2m"})
			} else {
				err = t2.Do("POST", "/v1/cubes", map[string]any{"name": fmt.Sprintf("c%d", i), "type": "portfwd", "hook": "tc", "ports": []map[string]any{{"name": "p0"}}}, nil)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				refusal = append(refusal, err)
			case rd != nil:
				started = append(started, rd)
			default:
				made++
			}
		}()
	}
	// Every request is let go at once and then waits for the engine (a
	// change holds it), so all of them are in flight when it is free.
	held := errors.New("held")
	err := eng.Update(func(*cube.Topology) error {
		close(ready)
		time.Sleep(time.Second)
		return held
	})
	if err != held {
		t.Fatal(err)
	}
	wg.Wait()
	defer func() {
		cancel()
		for _, rd := range started {
			rd.Close()
		}
	}()
	for _, err := range refusal {
		refused(t, "a capture or cube over the quota", err, 403, "over quota cubes")
	}
	if len(started)+made != quota-1 {
		t.Errorf("%d captures started and %d cubes made at once, want %d in all (the quota of %d cubes less the one held)", len(started), made, quota-1, quota)
	}
	var doc struct {
		Cubes []struct{ Name, Tenant string }
	}
	if err := json.Unmarshal([]byte(topologyOf(t, admin)), &doc); err != nil {
		t.Fatal(err)
	}
	holds := 0
	for _, c := range doc.Cubes {
		if c.Tenant == "t2" {
			holds++
		}
	}
	if holds > quota {
		t.Errorf("t2 holds %d cubes, its quota is %d", holds, quota)
	}
}
