package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/testenv"
)

// TestOpenAPIConformance runs schemathesis (a third-party API fuzzer from
// PyPI, pinned in scripts/requirements-test.txt) against the live daemon's
// /v1/openapi.json: generated requests, valid and invalid, on every
// operation, with a small budget. No answer may be a 5xx, every answer must
// match the document (status code, content type, schema), and a request the
// document calls valid must not be refused as malformed (400): it is
// accepted, or refused for what it meets (403 another's or over a quota,
// 404 missing, 409 a clash with the state) or by a rule the document states
// in words but cannot check (422).
//
// It acts as a tenant that owns no interface (nothing it sends can reach
// the host's interfaces), over one cube of every NF type so that the typed
// paths reach real cubes; the administrator's read-only operations run too.
func TestOpenAPIConformance(t *testing.T) {
	testenv.E2E(t)
	venv, err := exec.Command("../../scripts/pyvenv.sh").Output()
	if err != nil {
		t.Fatalf("scripts/pyvenv.sh: %v", err)
	}
	st := filepath.Join(strings.TrimSpace(string(venv)), "bin", "schemathesis")
	dir := t.TempDir()
	tokens := `{"tokens": [{"token": "` + adminToken + `"}, {"token": "` + redToken + `", "tenant": "st"}],
	 "tenants": [{"name": "st", "quota": {"cubes": 16, "kernel_memory_bytes": 536870912}}]}`
	tokFile := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokFile, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startDaemon(t, "-listen", addr, "-tokens", tokFile)
	url := "http://" + addr
	tenant := client.New("", url, redToken)
	src, err := os.ReadFile("../../examples/p4/l2switch.p4")
	if err != nil {
		t.Fatal(err)
	}
	var ops strings.Builder
	// Valid requests with every boundary the document draws (the
	// coverage phase); valid and invalid ones at random (fuzzing).
	ops.WriteString("[phases.coverage.generation]\nmode = \"positive\"\n\n")
	ops.WriteString("[checks.positive_data_acceptance]\nexpected-statuses = [\"2xx\", \"401\", \"403\", \"404\", \"409\", \"422\", \"429\", \"5xx\"]\n\n")
	var types []struct{ Name string }
	if err := tenant.Do("GET", "/v1/types", nil, &types); err != nil {
		t.Fatal(err)
	}
	for _, ty := range types {
		body := map[string]any{"name": "st-" + ty.Name, "type": ty.Name}
		if ty.Name == "p4" {
			body["config"] = map[string]string{"program": "l2switch.p4", "source": string(src)}
		}
		if ty.Name == "nat64" {
			body["config"] = map[string]string{"pool": "198.19.64.1"} // required
		}
		if err := tenant.Do("POST", "/v1/cubes", body, nil); err != nil {
			t.Fatalf("%s cube: %v", ty.Name, err)
		}
		fmt.Fprintf(&ops, "[[operations]]\ninclude-path-regex = \"^/v1/nf/%s/\"\nparameters = { cube = \"st-%s\" }\n\n", ty.Name, ty.Name)
	}
	conf := filepath.Join(dir, "schemathesis.toml")
	if err := os.WriteFile(conf, []byte(ops.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(token string, extra ...string) {
		t.Helper()
		// The long poll waits up to its timeout_ms (a minute) by design:
		// its arguments are checked in internal/nf/p4.
		args := append([]string{"--config-file", conf, "run", url + "/v1/openapi.json",
			"-H", "Authorization: Bearer " + token, "--exclude-path", "/v1/nf/p4/{cube}/actions/poll",
			"--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,positive_data_acceptance",
			"--max-examples", "3", "--seed", "12", "--generation-deterministic", "--no-color", "--workers", "1",
			"--request-timeout", "120", "--report-dir", filepath.Join(dir, "report")}, extra...)
		cmd := exec.Command(st, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("schemathesis %s: %v\n%s", strings.Join(extra, " "), err, out)
		}
		if i := strings.Index(string(out), "SUMMARY"); i >= 0 {
			t.Logf("schemathesis %s:\n%s", strings.Join(extra, " "), out[i:])
		}
	}
	// As the tenant, then the administrator's reads. The topology
	// document is the administrator's to write (a tenant is refused it:
	// 403); internal/api's TestSchemaValidIsAccepted holds its cubes to
	// the document.
	run(redToken, "--phases", "examples,coverage,fuzzing", "--exclude-path", "/v1/topology")
	run(adminToken, "--include-method", "GET", "--phases", "examples,coverage,fuzzing")
	var after []json.RawMessage
	if err := tenant.Do("GET", "/v1/cubes", nil, &after); err != nil || len(after) == 0 {
		t.Fatalf("the daemon after the run: %v", err)
	}
}
