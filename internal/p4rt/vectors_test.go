package p4rt

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// codecMessage is a hand-written message: it encodes and decodes itself.
type codecMessage interface {
	marshaler
	unmarshaler
}

// vectorTypes are the hand-written messages of the P4Runtime types the
// vectors hold (testdata/p4runtime_vectors.py).
var vectorTypes = map[string]func() codecMessage{
	"p4.v1.WriteRequest":                        func() codecMessage { return &WriteRequest{} },
	"p4.v1.ReadRequest":                         func() codecMessage { return &ReadRequest{} },
	"p4.v1.ReadResponse":                        func() codecMessage { return &ReadResponse{} },
	"p4.v1.StreamMessageRequest":                func() codecMessage { return &StreamRequest{} },
	"p4.v1.StreamMessageResponse":               func() codecMessage { return &StreamResponse{} },
	"p4.v1.SetForwardingPipelineConfigRequest":  func() codecMessage { return &SetPipelineRequest{} },
	"p4.v1.GetForwardingPipelineConfigRequest":  func() codecMessage { return &GetPipelineRequest{} },
	"p4.v1.GetForwardingPipelineConfigResponse": func() codecMessage { return &GetPipelineResponse{} },
	"p4.v1.CapabilitiesResponse":                func() codecMessage { return &CapabilitiesResponse{} },
	"google.rpc.Status":                         func() codecMessage { return &Status{} },
}

// TestMessagesMatchP4RuntimePackage checks the hand-written codec against
// the encoder of PyPI's p4runtime package (the project's virtualenv,
// scripts/pyvenv.sh): one message of each kind edgenf reads or writes,
// every field it knows set, encoded by the package, is decoded by the
// codec and encoded again; the package must read back the same message.
// A field the codec drops, misnumbers or mistypes fails here, by name.
func TestMessagesMatchP4RuntimePackage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs the project's Python virtualenv")
	}
	out, err := exec.Command("../../scripts/pyvenv.sh").Output()
	if err != nil {
		t.Fatalf("scripts/pyvenv.sh: %v", err)
	}
	python := filepath.Join(strings.TrimSpace(string(out)), "bin", "python")
	run := func(mode string, in []byte) []byte {
		t.Helper()
		cmd := exec.Command(python, "testdata/p4runtime_vectors.py", mode)
		// the package's p4types_pb2 predates protobuf 4's generated code:
		// the pure-Python runtime reads it
		cmd.Env = append(os.Environ(), "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python")
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("p4runtime_vectors.py %s: %v\n%s", mode, err, stderr.String())
		}
		return b
	}
	type vector struct {
		Name string `json:"name"`
		Type string `json:"type"`
		Hex  string `json:"hex"`
		Got  string `json:"got"`
	}
	var vs []vector
	if err := json.Unmarshal(run("make", nil), &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) < len(vectorTypes) {
		t.Fatalf("%d vectors", len(vs))
	}
	for i := range vs {
		v := &vs[i]
		mk := vectorTypes[v.Type]
		if mk == nil {
			t.Fatalf("%s: no message for %s", v.Name, v.Type)
		}
		b, err := hex.DecodeString(v.Hex)
		if err != nil {
			t.Fatal(err)
		}
		m := mk()
		if err := m.unmarshal(b); err != nil {
			t.Errorf("%s: the codec cannot read the package's encoding: %v", v.Name, err)
			continue
		}
		v.Got = hex.EncodeToString(marshal(m))
	}
	in, _ := json.Marshal(vs)
	var bad []struct{ Name, Want, Got string }
	if err := json.Unmarshal(run("check", in), &bad); err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s: the codec's round trip differs from the package's message:\nwant\n%s\ngot\n%s", b.Name, b.Want, b.Got)
	}
}
