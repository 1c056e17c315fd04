package p4info_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4/p4info"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
)

// examples are the project's P4 programs: between them every section of
// P4Info edgenf produces (tables of each match kind, direct and indirect
// counters and meters, registers, value sets, digests with struct types,
// packet_in/packet_out headers, idle timeouts, const tables).
func examples(t *testing.T) map[string]*p4info.P4Info {
	t.Helper()
	files, err := filepath.Glob("../../../examples/p4/*.p4")
	if err != nil || len(files) < 10 {
		t.Fatalf("examples: %v %v", files, err)
	}
	out := map[string]*p4info.P4Info{}
	for _, f := range files {
		out[filepath.Base(f)] = model(t, f)
	}
	return out
}

// TestP4InfoText checks the text format against protobuf's Go text
// parser: it reads back to the same message as the binary form, and the
// ids and names are those of the model.
func TestP4InfoText(t *testing.T) {
	for name, m := range examples(t) {
		text, err := m.ProtoText()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bin, err := m.ProtoBinary()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fromText := dynamicpb.NewMessage(p4info.ProtoDescriptor())
		if err := prototext.Unmarshal(text, fromText); err != nil {
			t.Fatalf("%s: protobuf's text parser rejects the text: %v\n%s", name, err, text)
		}
		fromBin := dynamicpb.NewMessage(p4info.ProtoDescriptor())
		if err := proto.Unmarshal(bin, fromBin); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !proto.Equal(fromText, fromBin) {
			t.Errorf("%s: text and binary P4Info differ", name)
		}
		for _, tb := range m.Tables {
			want := "    id: " + itoa(tb.Preamble.ID) + "\n    name: \"" + tb.Preamble.Name + "\"\n"
			if !strings.Contains(string(text), want) {
				t.Errorf("%s: the text lacks table %s's preamble:\n%s", name, tb.Preamble.Name, want)
			}
		}
	}
	// the text of a name that needs escapes
	m := &p4info.P4Info{PkgInfo: p4info.PkgInfo{Arch: "v1model"}, Actions: []*p4info.Action{{
		Preamble: p4info.Preamble{ID: 0x01000001, Name: "a", Alias: "a", Annotations: []string{"@name(\"x\\y\")\n\x01é"}}}}}
	text, err := m.ProtoText()
	if err != nil {
		t.Fatal(err)
	}
	if want := `annotations: "@name(\"x\\y\")\n\001\303\251"`; !bytes.Contains(text, []byte(want)) {
		t.Errorf("escapes: got\n%s\nwant %s", text, want)
	}
	back := dynamicpb.NewMessage(p4info.ProtoDescriptor())
	if err := prototext.Unmarshal(text, back); err != nil {
		t.Fatal(err)
	}
	bin, _ := m.ProtoBinary()
	if got, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(back); !bytes.Equal(got, bin) {
		t.Error("escaped text does not read back to the same P4Info")
	}
}

func itoa(id uint32) string { b, _ := json.Marshal(id); return string(b) }

// TestP4InfoProtoMatchesP4RuntimePackage checks the P4Info schema and both
// protobuf forms against p4lang's generated p4info_pb2 (PyPI p4runtime, in
// the project's virtualenv): every field edgenf declares has p4lang's
// number and type; every example's text parses with protobuf's Python
// text_format (what p4runtime-shell uses) to exactly edgenf's binary.
func TestP4InfoProtoMatchesP4RuntimePackage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs the project's Python virtualenv")
	}
	out, err := exec.Command("../../../scripts/pyvenv.sh").Output()
	if err != nil {
		t.Fatalf("scripts/pyvenv.sh: %v", err)
	}
	type program struct {
		Name string `json:"name"`
		Text string `json:"text"`
		Bin  string `json:"bin"`
	}
	req := struct {
		Schema   string    `json:"schema"`
		Programs []program `json:"programs"`
	}{Schema: hex.EncodeToString(p4info.SchemaFile())}
	for name, m := range examples(t) {
		text, err := m.ProtoText()
		if err != nil {
			t.Fatal(err)
		}
		bin, err := m.ProtoBinary()
		if err != nil {
			t.Fatal(err)
		}
		req.Programs = append(req.Programs, program{name, string(text), hex.EncodeToString(bin)})
	}
	in, _ := json.Marshal(req)
	cmd := exec.Command(filepath.Join(strings.TrimSpace(string(out)), "bin", "python"), "testdata/p4info_check.py")
	// the package's generated code predates protobuf 4's: the pure-Python runtime reads it
	cmd.Env = append(os.Environ(), "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("p4info_check.py: %v\n%s", err, stderr.String())
	}
	var problems []string
	if err := json.Unmarshal(res, &problems); err != nil {
		t.Fatalf("p4info_check.py: %v: %s", err, res)
	}
	for _, p := range problems {
		t.Error(p)
	}
}
