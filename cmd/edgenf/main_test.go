package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"text/tabwriter"
)

func TestGenericTableKeepsTheModelsFieldOrder(t *testing.T) {
	rows := json.RawMessage(`[{"direction":"ingress","protocol":"ipv4-udp","nested":{"z":1,"a":2},"packets":3,"bytes":342},
		{"direction":"egress","protocol":"icmp","packets":1,"bytes":98,"extra":true}]`)
	if got, want := columnOrder(rows), []string{"direction", "protocol", "nested", "packets", "bytes", "extra"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	genericTable(tw, rows)
	tw.Flush()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.HasPrefix(lines[0], "DIRECTION  PROTOCOL") || !strings.Contains(lines[2], "icmp") || !strings.HasSuffix(lines[2], "true") {
		t.Fatalf("table:\n%s", b.String())
	}
}

// A 64-bit number (a UPF session's SEID) is printed digit for digit in a
// view's table and YAML, not through a float64 (1.1546480362259272e+19).
func TestGenericOutputKeepsEveryDigit(t *testing.T) {
	rows := json.RawMessage(`[{"seid":11546480362259272362,"share":0.25,"ul_packets":5004}]`)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	genericTable(tw, rows)
	tw.Flush()
	if got := strings.Fields(strings.Split(b.String(), "\n")[1]); !reflect.DeepEqual(got, []string{"11546480362259272362", "0.25", "5004"}) {
		t.Errorf("table row %q", got)
	}
	old := g.output
	defer func() { g.output = old }()
	g.output = "yaml"
	var y bytes.Buffer
	if err := show(&y, rows, nil); err != nil || !strings.Contains(y.String(), "seid: 11546480362259272362") {
		t.Errorf("yaml: %v\n%s", err, y.String())
	}
}

func TestParseKVTypesValuesByTheModel(t *testing.T) {
	sc := &schema{Type: "object", Properties: map[string]*schema{
		"port": {Type: "integer"}, "on": {Type: "boolean"}, "vlans": {Type: "array", Items: &schema{Type: "integer"}}, "name": {Type: "string"},
	}}
	got, err := parseKV(sc, []string{"port=0x10", "on=true", "vlans=10,20", "name=007"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"port": int64(16), "on": true, "vlans": []any{int64(10), int64(20)}, "name": "007"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%#v", got)
	}
	if _, err := parseKV(sc, []string{"prot=1"}); err == nil || !strings.Contains(err.Error(), `unknown field "prot"`) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := parseKV(sc, []string{"port=ten"}); err == nil || !strings.Contains(err.Error(), "port: want an integer") {
		t.Fatalf("bad integer: %v", err)
	}
}

// A word that is none of a group's subcommands is an error naming it (the
// group's help and exit 0 made a script's typo pass); the group alone
// still prints its help.
func TestUnknownSubcommandIsAnError(t *testing.T) {
	for _, args := range [][]string{{"tenant", "shwo", "red"}, {"slice", "bogus"}, {"p4", "table-ad"}, {"cube", "ad", "c1", "portfwd"}} {
		root := newRoot()
		root.SetArgs(args)
		root.SetOut(io.Discard)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("unknown command %q", args[1])) {
			t.Errorf("edgenf %s: %v, want unknown command %q", strings.Join(args, " "), err, args[1])
		}
	}
	root := newRoot()
	var help bytes.Buffer
	root.SetArgs([]string{"tenant"})
	root.SetOut(&help)
	if err := root.Execute(); err != nil || !strings.Contains(help.String(), "Available Commands") {
		t.Errorf("edgenf tenant: %v, help %q", err, help.String())
	}
}
