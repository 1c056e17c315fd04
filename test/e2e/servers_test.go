package e2e

// Third-party servers the telemetry tests run on loopback, each with a
// private data directory: Debian's influxd and prometheus.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// server starts a third-party server and stops it when the test ends; its
// output is in the test's log if the test fails. It is ready once a GET of
// readyURL answers wantCode.
func server(t *testing.T, readyURL string, wantCode int, name string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed (scripts/setup.sh installs it): %v", name, err)
	}
	log := newLogFile(t)
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = log.f, log.f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, log)
		}
	})
	ready := func() error {
		resp, err := http.Get(readyURL)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != wantCode {
			return fmt.Errorf("GET %s: HTTP %d", readyURL, resp.StatusCode)
		}
		return nil
	}
	var err error
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("%s exited:\n%s", name, log)
		default:
		}
		if err = ready(); err == nil {
			return
		}
	}
	t.Fatalf("%s is not ready: %v\n%s", name, err, log)
}

// getJSON GETs url and decodes its JSON answer (numbers as json.Number).
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, b)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	return dec.Decode(v)
}

// influxd is an InfluxDB 1.x server on loopback.
type influxd struct{ url string }

func startInfluxd(t *testing.T) *influxd {
	dir := t.TempDir()
	addr := freeAddr(t)
	conf := fmt.Sprintf(`reporting-disabled = true
bind-address = %q
[meta]
  dir = %q
[data]
  dir = %q
  wal-dir = %q
  query-log-enabled = false
[http]
  bind-address = %q
  log-enabled = false
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
[subscriber]
  enabled = false
[logging]
  level = "warn"
`, freeAddr(t), filepath.Join(dir, "meta"), filepath.Join(dir, "data"), filepath.Join(dir, "wal"), addr)
	confFile := filepath.Join(dir, "influxdb.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	x := &influxd{url: "http://" + addr}
	server(t, x.url+"/ping", 204, "influxd", "-config", confFile)
	return x
}

// influxResult is the answer of /query to one statement.
type influxResult struct {
	Series []struct {
		Name    string            `json:"name"`
		Tags    map[string]string `json:"tags"`
		Columns []string          `json:"columns"`
		Values  [][]any           `json:"values"`
	} `json:"series"`
	Error string `json:"error"`
}

// query runs one InfluxQL statement in database db.
func (x *influxd) query(t *testing.T, db, q string) influxResult {
	t.Helper()
	var res struct{ Results []influxResult }
	resp, err := http.PostForm(x.url+"/query", url.Values{"db": {db}, "q": {q}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil || len(res.Results) != 1 || res.Results[0].Error != "" {
		t.Fatalf("InfluxDB query %q: HTTP %d, %v %+v", q, resp.StatusCode, err, res)
	}
	return res.Results[0]
}

// prometheusServer is a Prometheus server on loopback scraping one target
// every second with a bearer token.
type prometheusServer struct{ url string }

func startPrometheus(t *testing.T, target, token string) *prometheusServer {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: edgenf
    authorization:
      credentials_file: %s
    static_configs:
      - targets: [%q]
`, tokFile, target)
	confFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := &prometheusServer{url: "http://" + addr}
	server(t, p.url+"/-/ready", 200, "prometheus", "--config.file", confFile, "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", addr, "--log.level", "warn")
	return p
}

// promSample is one series of an instant query's answer.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant PromQL query.
func (p *prometheusServer) query(t *testing.T, q string) []promSample {
	t.Helper()
	var res struct {
		Status string `json:"status"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(p.url+"/api/v1/query?query="+url.QueryEscape(q), &res); err != nil || res.Status != "success" {
		t.Fatalf("PromQL %q: %v (%s)", q, err, res.Status)
	}
	return res.Data.Result
}
