package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/testenv"
)

// metric reads one sample of the daemon's /metrics (-1: absent).
func (d *daemon) metric(t *testing.T, series string) float64 {
	t.Helper()
	var raw json.RawMessage
	if err := client.New(d.socket, "", "").Do("GET", "/metrics", nil, &raw); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(raw)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// edgenfd -apply-file keeps the topology equal to a file (a ConfigMap on a
// Kubernetes node): applied at start and on every change; a file that does
// not apply (missing, not YAML, invalid, naming a missing interface) is
// reported in the log and the metrics and changes nothing, traffic
// included; the pods edgenf-cni plugged in stay through every apply.
func TestApplyFile(t *testing.T) {
	testenv.E2E(t)
	lab, a, b, ra, rb := twoHosts(t)
	pa, _, err := lab.RootVeth("pa", "pb") // a pod's interface, plugged by hand below
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "node.yaml")
	d := startDaemon(t, "-apply-file", file)
	write := func(content string) {
		t.Helper()
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil { // like a ConfigMap update
			t.Fatal(err)
		}
	}
	topology := func() string { return d.cli("get", "topology", "-o", "json") }
	errorsSoFar := func() float64 { return d.metric(t, `edgenf_apply_file_applies_total{result="error"}`) }

	// The daemon's log reaches the test through a pipe, so a metric read can
	// overtake it: wait for both.
	logged := func(s string) bool { return strings.Contains(d.log.String(), s) }
	waitFor(t, "the missing file to be reported", func() bool { return errorsSoFar() >= 1 && logged("no such file") })
	if !logged("not applied") || d.metric(t, "edgenf_apply_file_ok") != 0 {
		t.Fatalf("a missing file is not reported:\n%s", d.log)
	}
	good := fmt.Sprintf(`cubes:
  - name: br
    type: bridge
    tenant: red
    ports:
      - {name: a, peer: %s}
      - {name: b, peer: %s}
`, ra, rb)
	write(good)
	waitFor(t, "the file to be applied", func() bool { return d.metric(t, "edgenf_apply_file_ok") == 1 })
	if err := a.Ping(ctx(t, 10*time.Second), "198.18.0.2", 2); err != nil {
		t.Fatal(err)
	}
	// a pod plugged in by the CNI plugin: no file names it
	ep := endpoint.Endpoint{Name: "enfapply", Tenant: "red", Cube: "br", Interface: pa, ContainerID: "c1"}
	if err := client.New(d.socket, "", "").Do("PUT", "/v1/endpoints/enfapply", ep, nil); err != nil {
		t.Fatal(err)
	}
	applied := topology()

	for _, bad := range []struct{ name, content, log string }{
		{"not YAML", "cubes: [\n  {name: x", "did not find expected"},
		{"no cubes key", "attachments: []\n", "cubes: required"},
		{"unknown NF type", strings.Replace(good, "type: bridge", "type: brigde", 1), "brigde"},
		{"missing interface", strings.Replace(good, rb, "nosuchif9", 1), "nosuchif9"},
		{"deletes the pod's cube", "cubes: []\n", "enfapply"},
	} {
		before := errorsSoFar()
		write(bad.content)
		waitFor(t, bad.name+" to be refused", func() bool { return errorsSoFar() > before && logged(bad.log) })
		if got := topology(); got != applied {
			t.Fatalf("%s changed the topology:\n%s", bad.name, got)
		}
		if d.metric(t, "edgenf_apply_file_ok") != 0 {
			t.Fatalf("%s: not reported (ok=%v):\n%s", bad.name, d.metric(t, "edgenf_apply_file_ok"), d.log)
		}
		if err := a.Ping(ctx(t, 10*time.Second), "198.18.0.2", 2); err != nil {
			t.Fatalf("after %s: %v", bad.name, err)
		}
	}
	// A refused file is retried with back-off and said once in the log.
	if n := strings.Count(d.log.String(), "nosuchif9"); n != 1 {
		t.Errorf("the same refusal logged %d times", n)
	}

	// A good change applies; the pod's port stays.
	write(strings.Replace(good, "tenant: red", "tenant: red\n    config: {aging_time: 60}", 1))
	waitFor(t, "the change to be applied", func() bool { return d.metric(t, "edgenf_apply_file_ok") == 1 })
	var br struct {
		Config struct {
			AgingTime int `json:"aging_time"`
		} `json:"config"`
		Ports []struct {
			Name, Peer string
		} `json:"ports"`
	}
	d.json(&br, "get", "cube", "br")
	if br.Config.AgingTime != 60 || len(br.Ports) != 3 {
		t.Fatalf("after the change: %+v", br)
	}
	if err := b.Ping(ctx(t, 10*time.Second), "198.18.0.1", 2); err != nil {
		t.Fatal(err)
	}
	if err := client.New(d.socket, "", "").Do("DELETE", "/v1/endpoints/enfapply", nil, nil); err != nil {
		t.Fatal(err)
	}
}
