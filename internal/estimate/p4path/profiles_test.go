package p4path

import (
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
)

// termCounts sums a path's uses by term.
func termCounts(p *Path) map[string]float64 {
	n := map[string]float64{}
	for _, u := range p.Uses {
		n[u.Term] += u.N
	}
	return n
}

// onePath is the path spec selects, which must be one.
func onePath(t *testing.T, pr *Program, spec string) *Path {
	t.Helper()
	paths, err := pr.Select(spec)
	if err != nil || len(paths) != 1 {
		t.Fatalf("%s: %v %v", spec, paths, err)
	}
	return paths[0]
}

// selectorProgram applies, on IPv4, an LPM table implemented by impl
// (declared as ap) with 9 bytes of selector keys.
func selectorProgram(t *testing.T, impl string) *Program {
	return programWith(t, ethIP, impl+` ap;
    table t {
        key = { h.ip.dst: lpm; h.ip.src: selector; h.ip.dst: selector; h.ip.proto: selector; }
        actions = { fwd; drop; }
        default_action = drop();
        implementation = ap;
    }`, `if (h.ip.isValid()) { t.apply(); }`, "", Options{})
}

var profileTerms = []string{TermCRC16, TermCRC32, TermHashOther, TermRandom, TermHashByte, TermHashBlock, TermProfileGroup, TermProfileMember}

// A hit of a selector's table hashes the declared selector fields (the
// selector's algorithm over their packed bytes) and resolves a group, then
// its member; a miss runs the compiled default and resolves nothing.
func TestActionSelectorUses(t *testing.T) {
	for _, c := range []struct {
		impl string
		hit  map[string]float64
	}{
		{"action_selector(HashAlgorithm.crc16, 32w1024, 32w16)",
			map[string]float64{TermCRC16: 1, TermHashBlock: 1, TermHashByte: 1, TermProfileGroup: 1, TermProfileMember: 1}},
		{"action_selector(HashAlgorithm.crc32, 32w1024, 32w32)",
			map[string]float64{TermCRC32: 1, TermHashBlock: 1, TermHashByte: 1, TermProfileGroup: 1, TermProfileMember: 1}},
		{"action_selector(HashAlgorithm.identity, 32w1024, 32w32)",
			map[string]float64{TermHashOther: 1, TermProfileGroup: 1, TermProfileMember: 1}},
		{"action_selector(HashAlgorithm.random, 32w1024, 32w16)",
			map[string]float64{TermRandom: 1, TermProfileGroup: 1, TermProfileMember: 1}},
	} {
		pr := selectorProgram(t, c.impl)
		for spec, want := range map[string]map[string]float64{"eth,ip,t=fwd": c.hit, "eth,ip,t=miss": {}} {
			got := termCounts(onePath(t, pr, spec))
			for _, term := range profileTerms {
				if got[term] != want[term] {
					t.Errorf("%s: %s: %s %v, want %v", c.impl, spec, term, got[term], want[term])
				}
			}
		}
	}
}

// A hit of a plain action profile's table resolves its member only.
func TestActionProfileUses(t *testing.T) {
	pr := programWith(t, ethIP, `action_profile(32w128) ap;
    table t { key = { h.ip.dst: exact; } actions = { fwd; drop; } default_action = drop(); implementation = ap; }`,
		`if (h.ip.isValid()) { t.apply(); }`, "", Options{})
	got := termCounts(onePath(t, pr, "eth,ip,t=fwd"))
	for _, term := range profileTerms {
		want := map[string]float64{TermProfileMember: 1}[term]
		if got[term] != want {
			t.Errorf("%s: %v, want %v", term, got[term], want)
		}
	}
}

// The same route through a selector is estimated dearer than through a
// plain table (every profile shipped, both hooks): the hash and the two
// lookups are priced.
func TestSelectorIsDearerThanAPlainTable(t *testing.T) {
	plain := programWith(t, ethIP, `table t { key = { h.ip.dst: lpm; } actions = { fwd; drop; } default_action = drop(); }`,
		`if (h.ip.isValid()) { t.apply(); }`, "", Options{})
	sel := selectorProgram(t, "action_selector(HashAlgorithm.crc16, 32w1024, 32w16)")
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		p, err := estimate.Builtin(hook)
		if err != nil {
			t.Fatal(err)
		}
		a := p.Price(onePath(t, plain, "eth,ip,t=fwd").Uses)
		b := p.Price(onePath(t, sel, "eth,ip,t=fwd").Uses)
		if len(b.Missing) > 0 || b.Total <= a.Total+10 {
			t.Fatalf("%s: plain table %.1f ns, through a selector %.1f ns (missing terms %v): want the selector dearer by more than 10 ns", hook, a.Total, b.Total, b.Missing)
		}
	}
}

// A checksum with payload sums the frame's bytes after the parsed headers,
// a 2-byte word at a time: the words follow the frame size and the headers
// parsed; a checksum without payload sums none.
func TestPayloadChecksum(t *testing.T) {
	const list = "{h.ip.src, h.ip.dst, 8w0, h.ip.proto, h.udp.len, h.udp.sport, h.udp.dport, h.udp.len}"
	for _, c := range []struct {
		csum  string
		frame int
		words float64 // on the path eth ip udp (42 bytes parsed)
	}{
		{"update_checksum_with_payload(h.udp.isValid(), " + list + ", h.udp.csum, HashAlgorithm.csum16);", 0, 9},      // 60-byte frame: 18 bytes
		{"update_checksum_with_payload(h.udp.isValid(), " + list + ", h.udp.csum, HashAlgorithm.csum16);", 1500, 729}, // 1458 bytes
		{"update_checksum_with_payload(h.udp.isValid(), " + list + ", h.udp.csum, HashAlgorithm.csum16);", 43, 1},     // 1 byte
		{"update_checksum(h.udp.isValid(), " + list + ", h.udp.csum, HashAlgorithm.csum16);", 1500, 0},
	} {
		pr := programWith(t, ethIP, "", "", c.csum, Options{FrameBytes: c.frame})
		got := termCounts(onePath(t, pr, "eth,ip,udp"))
		wantSums := map[bool]float64{true: 1}[c.words > 0]
		if got[TermCsumPayloadWord] != c.words || got[TermCsumPayload] != wantSums || got[TermCsum] != 1 {
			t.Errorf("%s, %d-byte frame: %v payload words, %v payload sums, %v checksums; want %v, %v, 1",
				strings.Fields(c.csum)[0], c.frame, got[TermCsumPayloadWord], got[TermCsumPayload], got[TermCsum], c.words, wantSums)
		}
		// on the path that stops at IPv4 the checksum's condition is false
		if got := termCounts(onePath(t, pr, "eth,ip")); got[TermCsumPayloadWord] != 0 || got[TermCsum] != 0 {
			t.Errorf("%s: path without UDP: %v", strings.Fields(c.csum)[0], got)
		}
	}
}

// A CRC is priced as the generated code runs it: a key of 8 bytes or more
// in blocks of eight by slicing (independent loads) and what is left a
// byte at a time; a shorter key byte by byte. ecmp.p4's selector hashes 9
// bytes: one block and one byte, where pricing every byte alike made it
// 20% dear.
func TestCRCPricedByBlocksAndBytes(t *testing.T) {
	for _, c := range []struct {
		fields        string
		blocks, bytes float64
	}{
		{"h.ip.dst", 0, 4},
		{"h.ip.src, h.ip.dst", 1, 0},
		{"h.ip.src, h.ip.dst, h.ip.proto", 1, 1},
		{"h.ip.src, h.ip.dst, h.ip.proto, h.udp.sport, h.udp.dport", 1, 5},
		{"h.ip.src, h.ip.dst, h.ip.src, h.ip.dst", 2, 0},
	} {
		for _, algo := range []string{"crc16", "crc32"} {
			pr := program(t, ethIP, "", "if (h.udp.isValid()) { hash(h.ip.idf, HashAlgorithm."+algo+", 32w0, {"+c.fields+"}, 32w65536); }")
			got := termCounts(onePath(t, pr, "eth,ip,udp"))
			base := map[string]string{"crc16": TermCRC16, "crc32": TermCRC32}[algo]
			if got[base] != 1 || got[TermHashBlock] != c.blocks || got[TermHashByte] != c.bytes {
				t.Errorf("%s over {%s}: %v %s, %v blocks, %v bytes; want 1, %v blocks, %v bytes", algo, c.fields, got[base], base, got[TermHashBlock], got[TermHashByte], c.blocks, c.bytes)
			}
		}
	}
}
