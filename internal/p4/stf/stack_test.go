package stf

import (
	"os"
	"strings"
	"testing"
)

// runSTFText runs STF commands given inline against a program, on one hook.
func runSTFText(t *testing.T, p4file, hook, text string) *Result {
	t.Helper()
	res := compileFile(t, p4file)
	cmds, err := Parse("inline.stf", text)
	if err != nil {
		t.Fatal(err)
	}
	r := load(t, res, hook)
	out, err := r.Run("inline.stf", cmds)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestParserLoopBound checks that a parser loop that never fills a stack
// (it only advances, by a variable amount) stops with error.ParserTimeout
// instead of looping.
func TestParserLoopBound(t *testing.T) {
	dir := t.TempDir()
	src := `#include <core.p4>
#include <v1model.p4>
header e_t { bit<48> d; bit<48> s; bit<16> t; }
header o_t { bit<8> kind; }
struct H { e_t e; o_t o; }
struct M { bit<8> n; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.e); transition opts; }
    state opts {
        m.n = m.n + 1;
        transition select(p.lookahead<bit<8>>()) { 0: done; default: skip; }
    }
    state skip { p.advance(8 * (bit<32>)(p.lookahead<bit<8>>() & 1)); transition opts; }
    state done { p.extract(h.o); transition accept; }
}
control VC(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.NoError) {
            h.e.t = 0;
        } else if (sm.parser_error == error.ParserTimeout) {
            h.e.t = 5;
        } else {
            h.e.t = 0xeeee;
        }
        h.e.s = (bit<48>)m.n;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.e); p.emit(h.o); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
`
	path := dir + "/loop.p4"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// three options then the end (0): 4 visits of opts; the skipped bytes
	// are not emitted. 40 non-zero bytes: the loop bound (16 visits) ends it
	// with ParserTimeout, 16 bytes consumed. (XDP only: the packets shrink
	// and are not IP.)
	text := `
packet 0 000000000001 000000000000 ffff 0707070000
expect 1 000000000001 000000000004 0000 00 00 $
packet 0 000000000001 000000000000 ffff ` + strings.Repeat("07", 40) + `
expect 1 000000000001 000000000010 0005 ` + strings.Repeat("07", 24) + ` $
`
	for _, hook := range []string{"xdp"} {
		out := runSTFText(t, path, hook, text)
		if !out.OK() {
			t.Fatalf("%s: %s", hook, out.Error())
		}
	}
}
