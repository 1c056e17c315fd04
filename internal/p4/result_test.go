package p4

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

func TestExplainLoadError(t *testing.T) {
	opt := mustFile(t, "../../examples/p4/l3router.p4")
	opt.NoObject = true
	res, err := Compile(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	// find the C line generated for "hdr.ipv4.ttl = hdr.ipv4.ttl - 1;"
	cline := 0
	for i, l := range strings.Split(res.C, "\n") {
		if strings.Contains(l, "s->hdr.f_ipv4.f_ttl = ") {
			cline = i + 1
			break
		}
	}
	p, ok := res.SourcePos(cline)
	if !ok || p.Line != 77 {
		t.Fatalf("C line %d maps to %v", cline, p)
	}
	ve := &ebpf.VerifierError{Cause: fmt.Errorf("permission denied"), Log: []string{
		"; s->hdr.f_ipv4.f_ttl = x; @ prog.c:" + fmt.Sprint(cline), "10: (71) r1 = *(u8 *)(r2 +0)", "R2 invalid mem access 'scalar'"}}
	e := res.ExplainLoadError(ve)
	if !strings.Contains(e.Error(), "l3router.p4:77:") || !strings.Contains(e.Error(), "invalid mem access") || !strings.Contains(e.Error(), "hdr.ipv4.ttl - 1") {
		t.Errorf("explained: %v", e)
	}
}

func TestWriteFiles(t *testing.T) {
	opt := mustFile(t, "../../examples/p4/portfwd.p4")
	opt.Defines = map[string]string{"UNUSED": ""}
	res, err := Compile(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := res.WriteFiles(dir, "portfwd", true)
	if err != nil || len(files) != 5 {
		t.Fatalf("%v %v", files, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "portfwd.p4info.json"))
	if !strings.Contains(string(b), "MyIngress.fwd") || strings.Contains(string(b), "edgenf") {
		t.Errorf("p4info: %s", b)
	}
}

func TestCompileErrors(t *testing.T) {
	_, err := Compile(context.Background(), Options{Path: "x.p4", Source: []byte("#include <v1model.p4>\nheader h { bit<7> a; }\n")})
	if err == nil || !strings.Contains(err.Error(), "x.p4:2:1: error: header h is 7 bits long") {
		t.Errorf("got %v", err)
	}
	_, err = Compile(context.Background(), Options{Path: "x.p4", Source: []byte("#include <v1model.p4>\n"), Arch: "tna"})
	if err == nil || !strings.Contains(err.Error(), `architecture "tna" is not supported (v1model, psa)`) {
		t.Errorf("got %v", err)
	}
	_, err = Compile(context.Background(), Options{Path: "x.p4", Source: []byte("#include <v1model.p4>\n")})
	if err == nil || !strings.Contains(err.Error(), "no 'main'") {
		t.Errorf("got %v", err)
	}
}
