package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/testenv"
)

// Every bad request fails (CLI exit ≠ 0, HTTP 4xx), names what is wrong, and
// leaves the state exactly as it was.
func TestBadInputIsRejectedAndChangesNothing(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	_, _, _, ra, rb := twoHosts(t)
	d.cli("cube", "add", "c1", "portfwd")
	d.cli("cube", "add", "c2", "portfwd")
	d.cli("cube", "add", "m1", "monitor")
	d.cli("port", "add", "c1", "p0", "--peer", ra)
	d.cli("port", "add", "c2", "p0")
	d.cli("port", "add", "c1", "p1", "--peer", "c2:p0")
	d.cli("port", "add", "c2", "p1", "--peer", rb)
	d.cli("port", "add", "c2", "p2")
	d.cli("table", "add", "c1", "rules", "in_port=p0", "out_port=p1")

	dir := t.TempDir()
	badYAML := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badYAML, []byte("cubes:\n  - name: x\n    type: [portfwd\n"), 0o644)
	badTopo := filepath.Join(dir, "badtopo.yaml")
	os.WriteFile(badTopo, []byte("cubes:\n  - name: x\n    type: portfwd\n    ports:\n      - {name: p0, peer: \"y:p0\"}\n"), 0o644)

	cases := []struct {
		name string
		args []string
		want []string // substrings of the error output
	}{
		{"unknown NF type", []string{"cube", "add", "x1", "teleporter"}, []string{"type", `unknown NF type "teleporter"`}},
		{"duplicate cube", []string{"cube", "add", "c1", "portfwd"}, []string{"name", `"c1" already exists`}},
		{"invalid cube name", []string{"cube", "add", "1bad", "portfwd"}, []string{"name", `invalid name "1bad"`}},
		{"invalid port name", []string{"port", "add", "c2", "p 3"}, []string{"port", "invalid name"}},
		{"unknown hook", []string{"cube", "add", "x2", "portfwd", "--hook", "egress"}, []string{"hook", `unknown hook "egress"`}},
		{"missing interface", []string{"port", "add", "c2", "p3", "--peer", "nosuchif0"}, []string{"peer", `no Linux interface named "nosuchif0"`}},
		{"port on a missing cube", []string{"port", "add", "ghost", "p0"}, []string{"cube", `no cube named "ghost"`}},
		{"duplicate port", []string{"port", "add", "c1", "p0"}, []string{"port", `already has a port "p0"`}},
		{"peer already taken", []string{"peer", "c2:p2", "c1:p1"}, []string{"peer", "already peered with"}},
		{"interface already a peer", []string{"port", "add", "c2", "p4", "--peer", ra}, []string{"peer", "already the peer of c1:p0"}},
		{"port peered with itself", []string{"peer", "c2:p2", "c2:p2"}, []string{"peer", "cannot be peered with itself"}},
		{"peer with missing cube port", []string{"peer", "c2:p2", "c1:p9"}, []string{"peer", `no port "p9"`}},
		{"malformed JSON entry", []string{"table", "add", "c1", "rules", "--json", `{"in_port": "p1",`}, []string{"JSON"}},
		{"wrong field type", []string{"table", "add", "c1", "rules", "--json", `{"in_port": 1, "out_port": "p0"}`}, []string{"in_port", "expected a string"}},
		{"unknown field", []string{"table", "add", "c1", "rules", "--json", `{"in_port": "p1", "outport": "p0"}`}, []string{"outport", "unknown field"}},
		{"entry on a missing port", []string{"table", "add", "c1", "rules", "in_port=p7", "out_port=p0"}, []string{"in_port", `no port "p7"`}},
		{"duplicate entry", []string{"table", "add", "c1", "rules", "in_port=p0", "out_port=p1"}, []string{"already has an entry"}},
		{"unknown table", []string{"table", "add", "c1", "routes", "x=1"}, []string{`no table "routes"`}},
		{"attach a standard cube", []string{"attach", "c2", "c1:p1"}, []string{"not transparent"}},
		{"attach to a missing point", []string{"attach", "m1", "c1:p8"}, []string{`no port "p8"`}},
		{"bad attach position", []string{"attach", "m1", "c1:p1", "--position", "middle"}, []string{"position", `invalid position "middle"`}},
		{"malformed YAML", []string{"apply", "-f", badYAML}, []string{"bad.yaml"}},
		{"topology with a dangling peer", []string{"apply", "-f", badTopo}, []string{"cubes.x.ports[p0].peer", `no cube named "y"`}},
		{"delete a missing cube", []string{"cube", "del", "ghost"}, []string{`no cube named "ghost"`}},
		{"ports on a transparent cube", []string{"port", "add", "m1", "p0"}, []string{"transparent"}},
	}
	before := d.cli("get", "topology", "-o", "json")
	for _, c := range cases {
		out, err := d.try(c.args...)
		if err == nil {
			t.Errorf("%s: `edgenf %s` succeeded:\n%s", c.name, strings.Join(c.args, " "), out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, w, out)
			}
		}
		if after := d.cli("get", "topology", "-o", "json"); after != before {
			t.Fatalf("%s changed the state:\n--- before\n%s\n--- after\n%s", c.name, before, after)
		}
	}

	// The same through HTTP: status codes and the field.
	api := client.New(d.socket, "", "")
	httpCases := []struct {
		method, path, body string
		code               int
		field              string
	}{
		{"POST", "/v1/cubes", `{"name": "x", "type": "portfwd"`, 400, ""},
		{"POST", "/v1/cubes", `{"name": "x", "type": "portfwd", "hook": 7}`, 400, "hook"},
		{"POST", "/v1/cubes", `{"name": "x", "kind": "portfwd"}`, 400, "kind"},
		{"POST", "/v1/cubes", `{"name": "c1", "type": "portfwd"}`, 409, "name"},
		{"POST", "/v1/cubes/ghost/ports", `{"name": "p0"}`, 404, "cube"},
		{"POST", "/v1/cubes/c2/ports", `{"name": "p9", "index": 64}`, 400, "cubes.c2.ports[p9].index"},
		{"POST", "/v1/cubes/c2/ports", `{"name": "p9", "index": 1}`, 409, "cubes.c2.ports[p9].index"},
		{"PUT", "/v1/topology", `{"cubes": [{"name": "a", "type": "portfwd"}, {"name": "a", "type": "monitor"}]}`, 409, "cubes.a.name"},
		{"GET", "/v1/cubes/c1/tables/rules/p5", ``, 404, "key"},
		{"POST", "/v1/cubes/c1/ports/p0/inject", `{"frame": "zz"}`, 400, "frame"},
	}
	for _, c := range httpCases {
		var body any
		if c.body != "" {
			body = json.RawMessage(c.body)
		}
		err := api.Do(c.method, c.path, body, nil)
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Code != c.code || ae.Field != c.field {
			t.Errorf("%s %s %s: got %#v, want HTTP %d naming field %q", c.method, c.path, c.body, err, c.code, c.field)
		}
	}
	if after := d.cli("get", "topology", "-o", "json"); after != before {
		t.Fatalf("bad HTTP requests changed the state:\n%s", after)
	}
}
