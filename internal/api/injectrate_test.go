package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/client"
)

// TestInjectRateIsPerTenant: a tenant over its injects_per_second quota
// gets 429 naming the quota, its limit and when to try again; another
// tenant injecting at the same time, and the administrator injecting into
// the limited tenant's cube, are not held back. A later frame of the
// limited tenant is let through once a token is back.
func TestInjectRateIsPerTenant(t *testing.T) {
	url, _ := tenantServer(t)
	admin, t1, t2 := client.New("", url, adminTok), client.New("", url, t1Tok), client.New("", url, t2Tok)
	if err := admin.Do("PUT", "/v1/tenants/t2", map[string]any{"quota": map[string]int64{"injects_per_second": 2, "inject_burst": 3}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cl   *client.Client
		name string
	}{{t1, "c1"}, {t2, "c2"}} {
		if err := c.cl.Do("POST", "/v1/cubes", map[string]any{"name": c.name, "type": "portfwd", "ports": []map[string]string{{"name": "p0"}}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	frame := map[string]any{"frame": strings.Repeat("ff", 6) + strings.Repeat("02", 6) + "0800" + strings.Repeat("00", 46)}
	inject := func(cl *client.Client, cube string) error {
		return cl.Do("POST", "/v1/cubes/"+cube+"/ports/p0/inject", frame, nil)
	}
	for i := 0; i < 3; i++ {
		if err := inject(t2, "c2"); err != nil {
			t.Fatalf("t2's frame %d of its burst of 3: %v", i+1, err)
		}
	}
	err := inject(t2, "c2")
	refused(t, "t2's fourth frame at once", err, http.StatusTooManyRequests,
		"quota.injects_per_second", "over quota injects_per_second: limit 2 frames a second in bursts of at most 3 (inject_burst); the next may be sent in")
	for i := 0; i < 20; i++ {
		if err := inject(t1, "c1"); err != nil {
			t.Fatalf("t1's frame %d, while t2 is over its rate: %v", i+1, err)
		}
		if err := inject(admin, "c2"); err != nil {
			t.Fatalf("the administrator's frame %d into t2's cube: %v", i+1, err)
		}
	}
	var ok bool
	for i := 0; i < 40 && !ok; i++ { // a token is back within half a second
		if err := inject(t2, "c2"); err == nil {
			ok = true
		} else if !strings.Contains(err.Error(), "over quota injects_per_second") {
			t.Fatal(err)
		} else {
			time.Sleep(25 * time.Millisecond)
		}
	}
	if !ok {
		t.Fatal("t2 still refused a second after its burst")
	}
}

// TestRateQuotasChecked: rate and burst quotas out of range are refused
// with the quota and the reason, and the record is not changed.
func TestRateQuotasChecked(t *testing.T) {
	url, _ := tenantServer(t)
	admin := client.New("", url, adminTok)
	for _, c := range []struct {
		quota map[string]int64
		want  string
	}{
		{map[string]int64{"inject_burst": 0}, "quota.inject_burst: a burst of 0 lets nothing through: want at least 1 (a rate of 0 refuses everything)"},
		{map[string]int64{"punt_burst": 0}, "quota.punt_burst: a burst of 0 lets nothing through"},
		{map[string]int64{"punts_per_second": 20_000_000}, "quota.punts_per_second: limit 20000000 a second is more than 10000000"},
		{map[string]int64{"injects_per_second": -1}, "quota.injects_per_second: limit -1 is negative"},
		{map[string]int64{"punt_burst": 2_000_000}, "quota.punt_burst: burst 2000000 is more than 1000000"},
	} {
		err := admin.Do("PUT", "/v1/tenants/t2", map[string]any{"quota": c.quota}, nil)
		refused(t, c.want, err, http.StatusBadRequest, c.want)
	}
	var st struct {
		Quotas []struct {
			Name  string `json:"name"`
			Limit int64  `json:"limit"`
		} `json:"quotas"`
	}
	if err := admin.Do("GET", "/v1/tenants/t2", nil, &st); err != nil {
		t.Fatal(err)
	}
	for _, q := range st.Quotas {
		if want := map[string]int64{"inject_burst": 100, "punt_burst": 200, "punts_per_second": 2000, "injects_per_second": 1000}[q.Name]; want != 0 && q.Limit != want {
			t.Errorf("quota %s is %d after refused changes, want the default %d", q.Name, q.Limit, want)
		}
	}
}
