package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
)

func withOutput(t *testing.T, format string) {
	old := g.output
	g.output = format
	t.Cleanup(func() { g.output = old })
}

// The program estimate: paths counted, the profile and its fallback named,
// the three paths with ns, packets per second and what dominates each;
// --path shows the path's whole breakdown.
func TestEstimateProgramOutput(t *testing.T) {
	withOutput(t, "table")
	missing := filepath.Join(t.TempDir(), "none.json")
	var b bytes.Buffer
	err := estimateProgram(&b, "../../examples/p4/l3router.p4", programOptions{hook: datapath.XDP, profiles: []string{missing},
		path: "ethernet,ipv4,ipv4_lpm=ipv4_forward,port_mac=set_smac", entries: []string{"ipv4_lpm=1000"}})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, re := range []string{
		`(?m)^\.\./\.\./examples/p4/l3router\.p4 at xdp: 12 paths$`,
		`(?m)^profile built-in: .*, hook xdp, full calibration of `,
		`(?m)^profile .*none\.json not found: using the built-in profile \(made on `,
		`(?m)^entries assumed \(--entries\): ipv4_lpm 1000$`,
		`(?m)^\s+ns/packet\s+per core\s+path$`,
		`(?m)^cheapest\s+[0-9]+\.[0-9]\s+[0-9.]+ [Mk]pps\s+#12 ethernet; drop$`,
		`(?m)^typical\s+[0-9]+\.[0-9]\s+[0-9.]+ Mpps\s+#2 ethernet ipv4; \(hdr\.ipv4\.ttl <= 1 @99\) false; ipv4_lpm hit → ipv4_forward; port_mac hit → set_smac; send$`,
		`(?m)^most expensive\s+[0-9]+\.[0-9]\s+[0-9.]+ Mpps\s+#`,
		`(?m)^typical \(#2\), dominated by:\n  P4 cube \(entry, stages, send\)\s+[0-9.]+ ns\s+[0-9]+%$`,
		`(?m)^  table ipv4_lpm \(lpm, 32-bit key, 1000 entries\)\s+[0-9.]+ ns\s+[0-9]+%$`,
		`(?m)^most expensive \(#2\): the typical path$`,
		`(?m)^path #2: ethernet ipv4; .*; send\n  [0-9.]+ ns per packet, [0-9.]+ Mpps per core$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("output does not match %s:\n%s", re, out)
		}
	}

	withOutput(t, "json")
	b.Reset()
	if err := estimateProgram(&b, "../../examples/p4/l3router.p4", programOptions{hook: datapath.TC, profiles: []string{missing}}); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Hook    string `json:"hook"`
		Paths   int    `json:"paths"`
		Typical struct {
			ID   int     `json:"id"`
			NS   float64 `json:"ns"`
			PPS  float64 `json:"pps"`
			Cost struct {
				Items []struct {
					What string  `json:"what"`
					Term string  `json:"term"`
					NS   float64 `json:"ns"`
				} `json:"items"`
			} `json:"cost"`
		} `json:"typical"`
	}
	if err := json.Unmarshal(b.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	sum := 0.0
	for _, it := range rep.Typical.Cost.Items {
		sum += it.NS
	}
	if rep.Hook != "tc" || rep.Paths != 12 || rep.Typical.ID != 2 || rep.Typical.NS <= 0 || rep.Typical.PPS != 1e9/rep.Typical.NS ||
		sum < rep.Typical.NS-0.001 || sum > rep.Typical.NS+0.001 {
		t.Fatalf("json: %+v (items sum to %.3f)", rep, sum)
	}
}

// A program that does not compile gets the compiler's errors; options that
// name what the program lacks are refused.
func TestEstimateBadInput(t *testing.T) {
	withOutput(t, "table")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.p4")
	os.WriteFile(bad, []byte("#include <core.p4>\n#include <v1model.p4>\nheader h_t { bit<8> x }\n"), 0o644)
	var b bytes.Buffer
	err := estimateProgram(&b, bad, programOptions{hook: datapath.XDP})
	if err == nil || !strings.Contains(err.Error(), "bad.p4:3:") {
		t.Fatalf("compile error: %v", err)
	}
	for _, c := range []struct {
		o   programOptions
		msg string
	}{
		{programOptions{hook: datapath.XDP, entries: []string{"nope=3"}}, `the program has no table "nope"`},
		{programOptions{hook: datapath.XDP, entries: []string{"ipv4_lpm=many"}}, "want TABLE=N or N"},
		{programOptions{hook: "ingress"}, "want xdp or tc"},
		{programOptions{hook: datapath.XDP, path: "ipv6"}, "no path of the program matches"},
		{programOptions{hook: datapath.XDP, frameBytes: 9001}, "--frame-bytes 9001: want 14 to 9000 bytes"},
		{programOptions{hook: datapath.XDP, frameBytes: -1}, "--frame-bytes -1: want 14 to 9000 bytes"},
	} {
		if err := estimateProgram(&b, "../../examples/p4/l3router.p4", c.o); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("%+v: %v, want %q", c.o, err, c.msg)
		}
	}
}

// A topology file is checked as the daemon checks it, naming the field at
// fault; the command line says what it lacks or what does not go with -f.
func TestEstimateTopologyBadInput(t *testing.T) {
	withOutput(t, "table")
	dir := t.TempDir()
	for body, msg := range map[string]string{
		"cubes: [{name: x, type: nosuch}]\n":                                     `cubes.x.type: unknown NF type "nosuch"`,
		"cubes: [{name: r, type: router, config: {disable_route_cash: true}}]\n": "cubes.r.config.disable_route_cash: unknown field",
		"cubes: [{name: r, type: router, ports: [{name: p0, peer: r:p0}]}]\n":    "cubes.r.ports[p0].peer: port r:p0 cannot be peered with itself",
		"- just\n- a list\n": "want a mapping with `cubes:`",
		"cubes: [{name: b, type: bridge}]\nattachments: [{cube: fw, point: b:p0}]\n":                                                              `attachments[0].cube: no cube named "fw"`,
		"cubes: [{name: b, type: bridge, ports: [{name: p0, peer: tap0}]}, {name: fw, type: firewall}]\nattachments: [{cube: fw, point: b:p9}]\n": `attachments.b:p9: cube b has no port "p9"`,
	} {
		f := filepath.Join(dir, "t.yaml")
		os.WriteFile(f, []byte(body), 0o644)
		var b bytes.Buffer
		if err := estimateTopology(&b, f, nil); err == nil || !strings.Contains(err.Error(), msg) {
			t.Fatalf("%q: %v, want %q", body, err, msg)
		}
		if b.Len() != 0 {
			t.Fatalf("%q: printed %q", body, b.String())
		}
	}
	if err := estimateTopology(&bytes.Buffer{}, filepath.Join(dir, "none.yaml"), nil); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing file: %v", err)
	}
	for _, args := range [][]string{
		{"estimate"},
		{"estimate", "-f", "../../examples/topologies/tenant-chains.yaml", "--path", "1"},
		{"estimate", "-f", "../../examples/topologies/tenant-chains.yaml", "--hook", "tc"},
		{"estimate", "-f", "../../examples/topologies/tenant-chains.yaml", "../../examples/p4/l3router.p4"},
	} {
		root := newRoot()
		var out bytes.Buffer
		root.SetArgs(args)
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		if err == nil || !regexp.MustCompile(`give a P4 program or -f TOPOLOGY|is for a P4 program, not a topology file`).MatchString(err.Error()) {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
	}
}

// A topology file's chains, hop by hop, with totals and packets per second.
func TestEstimateTopologyOutput(t *testing.T) {
	withOutput(t, "table")
	var b bytes.Buffer
	if err := estimateTopology(&b, "../../examples/topologies/tenant-chains.yaml", []string{filepath.Join(t.TempDir(), "none.json")}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, re := range []string{
		`(?m)^chain veth-a → ddosa → fwa → ra:out → nata → veth-b$`,
		`(?m)^  ddosa \(ddos, ingress at ra:in\)\s+[0-9.]+ ns`,
		`(?m)^  ra \(router, in→out\)\s+[0-9.]+ ns\s+route cache on.*; entered through the patch panel$`, // after the firewall's stack
		`(?m)^  nata \(nat, egress at ra:out\)\s+[0-9.]+ ns`,
		`(?m)^  total\s+[0-9.]+ ns\s+[0-9.]+ Mpps per core$`,
		`(?m)^chain veth-c → p4b:out → veth-d$`,
		`(?m)^  p4b \(p4, in→out\)\s+[0-9.]+ ns\s+typical path #2 of 12`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("output does not match %s:\n%s", re, out)
		}
	}
}

// A topology with slices prints each slice's estimate, its dearest chain,
// against the slice's own budget; a slicer's hop into a slice is priced as
// that slice's frame.
func TestEstimateSlicesOutput(t *testing.T) {
	withOutput(t, "table")
	var b bytes.Buffer
	if err := estimateTopology(&b, "../../examples/topologies/slices.yaml", []string{filepath.Join(t.TempDir(), "none.json")}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, re := range []string{
		`(?m)^  edge \(slicer, up→cctv\)\s+[0-9.]+ ns\s+a frame of slice cctv, classified`,
		`(?m)^  edge \(slicer, up→rail\)\s+[0-9.]+ ns\s+a frame of slice rail, classified`,
		`(?m)^slices \(each costs its dearest chain\):$`,
		`(?m)^  slice edge/cctv\s+[0-9.]+ ns\s+[0-9.]+ Mpps per core\s+2 chains, dearest .*\s+budget 400 ns: within$`,
		`(?m)^  slice edge/rail\s+[0-9.]+ ns\s+[0-9.]+ Mpps per core\s+2 chains, dearest .*rail-fw.*\s+budget 600 ns: within$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("output does not match %s:\n%s", re, out)
		}
	}
	if regexp.MustCompile(`(?m)^chain .*(rail.*cctv|cctv.*rail)`).MatchString(out) {
		t.Fatalf("a chain crosses from one slice into another:\n%s", out)
	}
}

// PSA programs are estimated (both pipelines); a checksum with payload
// costs more on a bigger frame, and the breakdown says how many bytes.
func TestEstimatePSAAndFrameBytes(t *testing.T) {
	withOutput(t, "table")
	var b bytes.Buffer
	if err := estimateProgram(&b, "../../examples/p4/psa_l3fwd.p4", programOptions{hook: datapath.XDP, path: "ethernet,ipv4,routes=forward"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"psa_l3fwd.p4 at xdp: 5 paths", "routes hit → forward; send", "PSA pipeline (architecture metadata)"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, b.String())
		}
	}
	cost := func(frame int) string {
		var b bytes.Buffer
		if err := estimateProgram(&b, "../../examples/p4/tcpflags.p4", programOptions{hook: datapath.XDP, path: "5", frameBytes: frame}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	small, big := cost(0), cost(1500)
	if !strings.Contains(small, "payload (6 bytes)") || !strings.Contains(big, "payload (1446 bytes)") {
		t.Fatalf("60-byte frame:\n%s\n1500-byte frame:\n%s", small, big)
	}
}
