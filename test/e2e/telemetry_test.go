package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/testenv"
)

// fullStats returns cube → port (or direction) → every counter of the
// daemon's stats, by its JSON name (rx_packets, drop_bytes, ...).
func (d *daemon) fullStats(cubes ...string) map[string]map[string]map[string]uint64 {
	d.t.Helper()
	var all []struct {
		Cube  string `json:"cube"`
		Ports []map[string]any
	}
	d.json(&all, append([]string{"stats"}, cubes...)...)
	out := map[string]map[string]map[string]uint64{}
	for _, c := range all {
		out[c.Cube] = map[string]map[string]uint64{}
		for _, p := range c.Ports {
			row := map[string]uint64{}
			for k, v := range p {
				if f, ok := v.(float64); ok && k != "index" {
					row[k] = uint64(f)
				}
			}
			out[c.Cube][p["port"].(string)] = row
		}
	}
	return out
}

// statsFields maps the daemon's stats (JSON) to the series' names.
var statsFields = map[string]string{
	"rx_packets": "receive_packets_total", "rx_bytes": "receive_bytes_total",
	"tx_packets": "transmit_packets_total", "tx_bytes": "transmit_bytes_total",
	"drop_packets": "drop_packets_total", "drop_bytes": "drop_bytes_total",
	"punt_packets": "punt_packets_total",
}

// scrapeTCP GETs /metrics over TCP with a bearer token.
func scrapeTCP(t *testing.T, base, token string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: HTTP %d: %s", resp.StatusCode, b)
	}
	return string(b)
}

// telemetryChain starts a daemon with flags on a loopback TCP listener
// (tokens of tokenFile), builds host A ↔ c1 ↔ c2 ↔ host B (XDP),
// sends n datagrams A→B and returns the daemon's counters afterwards.
func telemetryChain(t *testing.T, n int, flags ...string) (*daemon, string, map[string]map[string]map[string]uint64) {
	addr := freeAddr(t)
	d := startDaemon(t, append([]string{"-listen", addr, "-tokens", tokenFile(t)}, flags...)...)
	_, a, b, ra, rb := twoHosts(t)
	names := buildChain(t, d, ra, rb, "xdp", "xdp")
	if got := sendUDP(t, a, b, "198.18.0.2", 7000, n, 200); got != n {
		t.Fatalf("%d of %d datagrams arrived", got, n)
	}
	st := d.fullStats(names...)
	if st["c2"]["p1"]["tx_packets"] != uint64(n) {
		t.Fatalf("c2:p1 sent %d packets, want %d", st["c2"]["p1"]["tx_packets"], n)
	}
	return d, "http://" + addr, st
}

// TestInfluxExportEqualsCounters: the daemon pushes its counters to a real
// InfluxDB every interval; after traffic, the last value of every field of
// every port in InfluxDB is the daemon's counter, series were written at
// several intervals, and nothing was dropped.
func TestInfluxExportEqualsCounters(t *testing.T) {
	testenv.E2E(t)
	x := startInfluxd(t)
	x.query(t, "", `CREATE DATABASE "edge"`)
	const n = 300
	_, base, want := telemetryChain(t, n, "-influx-url", x.url, "-influx-db", "edge", "-influx-interval", "1s")

	mismatch := eventually(30*time.Second, func() string {
		last := map[string]map[string]uint64{} // "c1:p0" → field → value
		for _, s := range x.query(t, "edge", `SELECT last(*) FROM "edgenf_port" GROUP BY "cube", "port"`).Series {
			row := map[string]uint64{}
			for i, col := range s.Columns {
				if f, ok := strings.CutPrefix(col, "last_"); ok {
					// null: no point of that field yet (the first
					// interval is still being written); ask again
					num, ok := s.Values[0][i].(json.Number)
					if !ok {
						return fmt.Sprintf("%s:%s %s: %v in InfluxDB, not yet a number", s.Tags["cube"], s.Tags["port"], f, s.Values[0][i])
					}
					v, _ := num.Int64()
					row[f] = uint64(v)
				}
			}
			last[s.Tags["cube"]+":"+s.Tags["port"]] = row
		}
		if m := compareCounters(want, last); m != "" {
			return "InfluxDB's last values are not the daemon's counters: " + m
		}
		count := x.query(t, "edge", `SELECT count("receive_packets_total") FROM "edgenf_port" WHERE "cube" = 'c1' AND "port" = 'p0'`)
		if len(count.Series) == 0 || len(count.Series[0].Values) == 0 {
			return "no point of c1:p0 in InfluxDB yet"
		}
		num, _ := count.Series[0].Values[0][1].(json.Number)
		if c, _ := num.Int64(); c < 3 {
			return fmt.Sprintf("c1:p0 was written %d times, want one per interval, at least 3", c)
		}
		return ""
	})
	if mismatch != "" {
		t.Fatal(mismatch)
	}
	up := x.query(t, "edge", `SELECT last("up") FROM "edgenf_cube" GROUP BY "cube", "type"`)
	if len(up.Series) != 2 || up.Series[0].Tags["type"] != "portfwd" || up.Series[0].Values[0][1] != json.Number("1") {
		t.Errorf("edgenf_cube up: %+v", up.Series)
	}
	metrics := scrapeTCP(t, base, adminToken)
	for _, want := range []string{`edgenf_influx_points_dropped_total{reason="buffer_full"} 0`, `edgenf_influx_points_dropped_total{reason="rejected"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grep(metrics, "edgenf_influx"))
		}
	}
	if strings.Contains(metrics, "edgenf_influx_points_written_total 0\n") {
		t.Error("nothing written, says /metrics")
	}
}

// compareCounters says how got (cube:port → series field → value) differs
// from the daemon's counters, or "".
func compareCounters(want map[string]map[string]map[string]uint64, got map[string]map[string]uint64) string {
	for c, ports := range want {
		for p, row := range ports {
			for k, v := range row {
				f, ok := statsFields[k]
				if !ok {
					continue
				}
				if g, has := got[c+":"+p][f]; !has || g != v {
					return fmt.Sprintf("%s:%s %s = %d (present: %v), the daemon says %d", c, p, f, g, has, v)
				}
			}
		}
	}
	return ""
}

// eventually polls check until it says nothing or timeout passes; it
// returns what check said last.
func eventually(timeout time.Duration, check func() string) string {
	var msg string
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if msg = check(); msg == "" {
			break
		}
	}
	return msg
}

func grep(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestPrometheusScrapesDaemon: a real Prometheus scrapes the daemon's TCP
// /metrics with a bearer token (credentials_file); its HTTP API answers the
// daemon's counters after traffic; every query of the Grafana dashboard
// works on what it scraped; promtool check metrics finds nothing to say
// about the exposition.
func TestPrometheusScrapesDaemon(t *testing.T) {
	testenv.E2E(t)
	const n = 250
	_, base, want := telemetryChain(t, n)
	p := startPrometheus(t, strings.TrimPrefix(base, "http://"), adminToken)

	mismatch := eventually(30*time.Second, func() string {
		got := map[string]map[string]uint64{}
		for _, f := range statsFields {
			for _, s := range p.query(t, "edgenf_port_"+f+`{job="edgenf"}`) {
				key := s.Metric["cube"] + ":" + s.Metric["port"]
				if got[key] == nil {
					got[key] = map[string]uint64{}
				}
				var v uint64
				fmt.Sscan(s.Value[1].(string), &v)
				got[key][f] = v
			}
		}
		if m := compareCounters(want, got); m != "" {
			return "Prometheus's values are not the daemon's counters: " + m
		}
		// two scrapes at least: a rate
		if s := p.query(t, `sum by (type) (rate(edgenf_port_transmit_packets_total{job="edgenf"}[1m]))`); len(s) != 1 || s[0].Metric["type"] != "portfwd" {
			return fmt.Sprintf("a rate by type: %+v", s)
		}
		return ""
	})
	if mismatch != "" {
		t.Fatal(mismatch)
	}
	if up := p.query(t, `up{job="edgenf"}`); len(up) != 1 || up[0].Value[1] != "1" {
		t.Errorf("up: %+v", up)
	}

	checkGrafanaDashboard(t, p)

	for _, tok := range []string{adminToken, redToken} {
		cmd := exec.Command("promtool", "check", "metrics")
		cmd.Stdin = strings.NewReader(scrapeTCP(t, base, tok))
		if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("promtool check metrics (token %s...): %v\n%s", tok[:4], err, out)
		}
	}
}

// checkGrafanaDashboard runs every query of docs/grafana/edgenf.json (its
// variables set to "all") through Prometheus: each must parse and, unless
// it shows only what is not happening here (drops, the InfluxDB export,
// a UPF, INT reports), have series.
func checkGrafanaDashboard(t *testing.T, p *prometheusServer) {
	t.Helper()
	b, err := os.ReadFile("../../docs/grafana/edgenf.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$__rate_interval", "1m", "$tenant", ".*", "$slice", ".*", "$cube", ".*", "$job", ".*")
	n := 0
	for _, panel := range dash.Panels {
		for _, tg := range panel.Targets {
			q := vars.Replace(tg.Expr)
			res := p.query(t, q) // fails the test if Prometheus refuses it
			if len(res) == 0 && !strings.Contains(q, "> 0") && !strings.Contains(q, "influx") && !strings.Contains(q, "edgenf_upf_") && !strings.Contains(q, "edgenf_p4_int_") {
				t.Errorf("panel %q: %s has no series", panel.Title, q)
			}
			n++
		}
	}
	for _, v := range dash.Templating.List {
		q, ok := v.Query.(map[string]any)
		if !ok {
			continue
		}
		// label_values(METRIC{...}, LABEL)
		expr, _ := q["query"].(string)
		inner := strings.TrimSuffix(strings.TrimPrefix(expr, "label_values("), ")")
		i := strings.LastIndex(inner, ",")
		if i < 0 {
			t.Errorf("variable %s: %q", v.Name, expr)
			continue
		}
		p.query(t, "count("+vars.Replace(inner[:i])+")")
		n++
	}
	if n < 20 {
		t.Errorf("only %d queries in the dashboard", n)
	}
}

// TestTopShowsRates: edgenf top, one request per refresh (/v1/stats),
// shows a port's packet rate while traffic runs, and refuses a cube that
// does not exist.
func TestTopShowsRates(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	buildChain(t, d, ra, rb, "xdp")
	traffic, stop := context.WithCancel(context.Background())
	defer stop()
	udpStream(t, traffic, a, b, "198.18.0.2", 7200)
	out := d.cli("top", "--interval", "1s", "--count", "2")
	var rx float64
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "c1" && f[1] == "p0" {
			fmt.Sscan(f[2], &rx)
		}
	}
	if rx < 100 {
		t.Fatalf("c1:p0 receives %v pps, says top, while ~1000 pps run:\n%s", rx, out)
	}
	if out, err := d.try("top", "nope", "--count", "1"); err == nil || !strings.Contains(out, `no cube named "nope"`) {
		t.Fatalf("top of a missing cube: %v\n%s", err, out)
	}
}
