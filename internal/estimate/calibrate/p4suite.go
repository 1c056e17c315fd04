package calibrate

import (
	"fmt"
	"strings"

	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// The P4 micro-programs: one template (Ethernet, IPv4, UDP and generic
// headers; V1Switch), and per program the headers parsed, the ingress
// body, the checksum and deparser bodies and the table entries. In the
// spirit of the seed's four experiments (headers parsed, headers and fields
// modified, operations, tables), and beyond them: table kinds by key width
// and entries, hit and miss, actions by primitive count, every extern,
// header add and remove, checksums, the deparser's bytes. Each program's
// features come from the estimator's own path walk (p4path), so the fit
// prices exactly what estimates count.
const p4Template = `
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t { bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags; bit<13> frag;
    bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst; }
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
header x8_t { bit<64> a; }
header x32_t { bit<64> a; bit<64> b; bit<64> c; bit<64> d; }
struct H { HEADERS }
struct M { bit<32> idx; bit<32> v; bit<2> color; bit<32> w0; bit<32> w1; bit<32> w2; bit<32> w3; META }
struct D5 { bit<32> src; bit<32> dst; bit<8> proto; bit<16> sport; bit<16> dport; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { PARSE transition accept; }
}
control V(inout H h, inout M m) { apply { VERIFY } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    EXTERNS
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action set(bit<32> v) { m.v = v; }
    DECLS
    apply {
        sm.egress_spec = 1;
        BODY
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { CSUM } }
control D(packet_out p, in H h) { apply { EMIT } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
`

// headerTypes are the headers a micro-program may declare, in struct
// order, with their types.
var headerTypes = []struct{ name, typ string }{
	{"eth", "eth_t"}, {"ip", "ipv4_t"}, {"udp", "udp_t"}, {"a8", "x8_t"}, {"b8", "x8_t"},
	{"a32", "x32_t"}, {"b32", "x32_t"}, {"n8", "x8_t"}, {"n32", "x32_t"}, {"u1", "x32_t"}, {"u2", "x32_t"}, {"u3", "x32_t"}, {"u4", "x32_t"},
}

// externDecls are declared when the program uses them.
var externDecls = []struct{ use, decl string }{
	{"r.", "register<bit<32>>(1024) r;"},
	{"c.count", "counter(1024, CounterType.packets_and_bytes) c;"},
	{"mt.", "meter(1024, MeterType.packets) mt;"},
}

// p4Frame is what every micro-program receives: Ethernet, IPv4, UDP and
// 86 bytes the generic headers are parsed from (128 bytes).
var p4Frame = estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1234, Dport: 5678, Size: 128})

// p4Case is one micro-program.
type p4Case struct {
	name  string
	parse string // headers extracted, in struct order: "eth ip udp a8"
	// parseMore are parser statements after the extracts
	parseMore string
	// declare are headers declared besides the ones parsed and used
	// (never valid: state, and headers the deparser checks for nothing).
	declare string
	meta    int    // extra bit<64> metadata fields (state size)
	decls   string // ingress declarations (tables, actions)
	body    string // ingress statements
	csum    string // compute checksum body
	ver     string // verify checksum body
	emit    string // deparser body ("" emits h)
	// path selects the measured path (p4path.Select) when the program has
	// several; "" takes the typical one.
	path    string
	entries func(p *tableruntime.Program) error
	meter   string // a meter to configure (rates far above the test's)
	// raw is a whole program instead of the template's (PSA).
	raw string
	// anchor cases are measured by the short calibration too.
	anchor bool
	// singleRef: measured a run per call too, at TC, to correct the
	// programs that must be measured so (see correctSingles).
	singleRef bool
}

func (c p4Case) source() string {
	if c.raw != "" {
		return c.raw
	}
	var parse strings.Builder
	for _, h := range strings.Fields(c.parse) {
		fmt.Fprintf(&parse, "p.extract(h.%s); ", h)
	}
	parse.WriteString(c.parseMore)
	var meta strings.Builder
	for i := 0; i < c.meta; i++ {
		fmt.Fprintf(&meta, "bit<64> pad%d; ", i)
	}
	code := c.parse + " " + c.declare + " " + c.decls + " " + c.body + " " + c.csum + " " + c.ver
	var hdrs strings.Builder
	for _, h := range headerTypes {
		if strings.Contains(" "+c.parse+" "+c.declare+" ", " "+h.name+" ") || strings.Contains(code, "h."+h.name+".") || strings.Contains(code, "h."+h.name+")") {
			fmt.Fprintf(&hdrs, "%s %s; ", h.typ, h.name)
		}
	}
	if hdrs.Len() == 0 {
		hdrs.WriteString("eth_t eth; ")
	}
	var externs strings.Builder
	for _, e := range externDecls {
		if strings.Contains(code, e.use) {
			externs.WriteString(e.decl + " ")
		}
	}
	emit := c.emit
	if emit == "" {
		emit = "p.emit(h);"
	}
	return strings.NewReplacer("HEADERS", hdrs.String(), "PARSE", parse.String(), "META", meta.String(), "EXTERNS", externs.String(),
		"DECLS", c.decls, "BODY", c.body, "CSUM", c.csum, "VERIFY", c.ver, "EMIT", emit).Replace(p4Template)
}

const l3 = "eth ip udp"

// table declarations used by several cases
func tableDecl(name, keys, kind string, size int) string {
	var k strings.Builder
	for _, f := range strings.Fields(keys) {
		fmt.Fprintf(&k, "%s: %s; ", f, kind)
	}
	return fmt.Sprintf("table %s { key = { %s } actions = { fwd; NoAction; } default_action = NoAction(); size = %d; }", name, k.String(), size)
}

func add(p *tableruntime.Program, table string, prio uint32, kv ...string) error {
	var ms []p4info.Match
	for i := 0; i+1 < len(kv); i += 2 {
		ms = append(ms, p4info.Match{Field: kv[i], Value: kv[i+1]})
	}
	return p.AddEntry(table, ms, "I.fwd", []p4info.Arg{{Name: "port", Value: "1"}}, prio)
}

// fill adds n entries that do not match the frame: a /24 or an address
// per entry in 10.0.0.0/8 (exact: addresses; lpm: prefixes of 16 to 28
// bits; ternary: masks of /24).
func fill(p *tableruntime.Program, table, field, kind string, n int) error {
	for i := 0; i < n; i++ {
		a, b, c := 1+i/65536%250, i/256%256, i%256
		var v string
		switch kind {
		case "exact":
			v = fmt.Sprintf("10.%d.%d.%d", a, b, c)
		case "lpm":
			plen := 16 + i%13
			v = fmt.Sprintf("10.%d.%d.0/%d", a, (b*7+c)%256, plen)
		default:
			v = fmt.Sprintf("10.%d.%d.0&&&255.255.255.0", a, (b*7+c)%256)
		}
		prio := uint32(0)
		if kind == "ternary" {
			prio = uint32(10 + i)
		}
		if err := add(p, table, prio, field, v); err != nil && !strings.Contains(err.Error(), "exists") {
			return fmt.Errorf("%s entry %d (%s): %w", table, i, v, err)
		}
	}
	return nil
}

const (
	// idx picks a cell by the source address (externs' index)
	idx        = "m.idx = (bit<32>)h.ip.src[7:0]; "
	ipv4Fields = "{h.ip.version, h.ip.ihl, h.ip.tos, h.ip.len, h.ip.id, h.ip.flags, h.ip.frag, h.ip.ttl, h.ip.proto, h.ip.src, h.ip.dst}"
	tuple      = "{h.ip.src, h.ip.dst, h.ip.proto, h.udp.sport, h.udp.dport}"
)

func assigns(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "m.w%d = m.w%d + %d; ", i%4, (i+1)%4, i+1)
	}
	return b.String()
}

// p4Cases is the suite.
func p4Cases() []p4Case {
	cs := []p4Case{
		// verdicts and the state reset
		{name: "no header, forwarded", anchor: true},
		{name: "no header, dropped", body: "mark_to_drop(sm);"},
		{name: "no header, punted to the CPU port", body: "sm.egress_spec = 510;"},
		{name: "state: +256 bytes of metadata", meta: 32},
		{name: "state: 4 headers declared, never valid (+132 bytes)", declare: "u1 u2 u3 u4"},
		{name: "parse Ethernet, IPv4, UDP; 4 headers declared, never valid", parse: l3, declare: "u1 u2 u3 u4"},
		// headers parsed (each emitted back where it was)
		{name: "parse Ethernet", parse: "eth"},
		{name: "parse Ethernet, IPv4", parse: "eth ip"},
		{name: "parse Ethernet, IPv4, UDP", parse: l3, anchor: true, singleRef: true},
		{name: "parse 5 headers (+2 x 8 bytes)", parse: l3 + " a8 b8"},
		{name: "parse 6 headers (+2 x 8, 32 bytes)", parse: l3 + " a8 b8 a32"},
		{name: "parse 7 headers (+2 x 8, 2 x 32 bytes)", parse: l3 + " a8 b8 a32 b32"},
		{name: "parse Ethernet, IPv4, UDP, a lookahead", parse: l3, parseMore: "m.v = (bit<32>)p.lookahead<bit<16>>();", body: "h.ip.id = m.v[15:0];"},
		{name: "parse Ethernet, IPv4, UDP, 3 lookaheads", parse: l3,
			parseMore: "m.v = (bit<32>)p.lookahead<bit<16>>(); m.w0 = (bit<32>)p.lookahead<bit<8>>(); m.w1 = (bit<32>)p.lookahead<bit<32>>();",
			body:      "h.ip.id = m.v[15:0]; h.ip.ttl = m.w0[7:0]; h.udp.csum = m.w1[15:0];"},
		// header add and remove (the deparser moves what follows)
		{name: "add an 8-byte header", parse: l3, body: "h.n8.setValid(); h.n8.a = 1;"},
		{name: "add a 32-byte header", parse: l3, body: "h.n32.setValid(); h.n32.a = 1;"},
		{name: "remove an 8-byte header", parse: l3 + " a8", body: "h.a8.setInvalid();"},
		{name: "remove 2 headers (40 bytes)", parse: l3 + " a8 a32", body: "h.a8.setInvalid(); h.a32.setInvalid();"},
		// headers and fields modified
		{name: "modify 1 field of IPv4", parse: l3, body: "h.ip.ttl = h.ip.ttl - 1;"},
		{name: "modify 4 fields of IPv4", parse: l3, body: "h.ip.ttl = h.ip.ttl - 1; h.ip.tos = 4; h.ip.id = 7; h.ip.dst = h.ip.src;"},
		{name: "modify 1 field of Ethernet, IPv4, UDP", parse: l3, body: "h.eth.src = h.eth.dst; h.ip.ttl = 9; h.udp.sport = 53;"},
		{name: "modify 1 field 4 times", parse: l3, body: "h.ip.ttl = h.ip.ttl - 1; h.ip.ttl = h.ip.ttl - 1; h.ip.ttl = h.ip.ttl - 1; h.ip.ttl = h.ip.ttl - 1;"},
		{name: "8 metadata assignments", parse: l3, body: assigns(8)},
		{name: "32 metadata assignments", parse: l3, body: assigns(32)},
		// actions by primitive count
		{name: "action of 1 primitive", parse: l3, decls: "action a() { " + assigns(1) + "}", body: "a();"},
		{name: "action of 8 primitives", parse: l3, decls: "action a() { " + assigns(8) + "}", body: "a();"},
		{name: "4 actions of 2 primitives", parse: l3, decls: "action a() { " + assigns(2) + "}", body: "a(); a(); a(); a();"},
		// exact-match tables by key width, hit and miss
		{name: "exact table, 4-byte key, hit", parse: l3, decls: tableDecl("t", "h.ip.dst", "exact", 4096), body: "t.apply();", path: "t=fwd", anchor: true,
			entries: func(p *tableruntime.Program) error { return add(p, "I.t", 0, "h.ip.dst", "198.18.1.1") }},
		{name: "exact table, 4-byte key, miss", parse: l3, decls: tableDecl("t", "h.ip.dst", "exact", 4096), body: "t.apply();", path: "t=miss",
			entries: func(p *tableruntime.Program) error { return add(p, "I.t", 0, "h.ip.dst", "198.18.9.9") }},
		{name: "exact table, 4-byte key, hit among 1000", parse: l3, decls: tableDecl("t", "h.ip.dst", "exact", 4096), body: "t.apply();", path: "t=fwd",
			entries: func(p *tableruntime.Program) error {
				if err := fill(p, "I.t", "h.ip.dst", "exact", 999); err != nil {
					return err
				}
				return add(p, "I.t", 0, "h.ip.dst", "198.18.1.1")
			}},
		{name: "exact table, 8-byte key, hit", parse: l3, decls: tableDecl("t", "h.ip.src h.ip.dst", "exact", 4096), body: "t.apply();", path: "t=fwd",
			entries: func(p *tableruntime.Program) error {
				return add(p, "I.t", 0, "h.ip.src", "198.18.0.10", "h.ip.dst", "198.18.1.1")
			}},
		{name: "exact table, 13-byte key, hit", parse: l3, decls: tableDecl("t", "h.ip.src h.ip.dst h.ip.proto h.udp.sport h.udp.dport", "exact", 4096), body: "t.apply();", path: "t=fwd",
			entries: func(p *tableruntime.Program) error {
				return add(p, "I.t", 0, "h.ip.src", "198.18.0.10", "h.ip.dst", "198.18.1.1", "h.ip.proto", "17", "h.udp.sport", "1234", "h.udp.dport", "5678")
			}},
		// the same, called as global functions: a counter the path never
		// reaches stops the compiler inlining them (backend.InlinesTables)
		{name: "exact table, 4-byte key, hit, called", parse: l3, decls: tableDecl("t", "h.ip.dst", "exact", 4096), body: "t.apply(); if (!h.ip.isValid()) { c.count(0); }", path: "t=fwd",
			entries: func(p *tableruntime.Program) error { return add(p, "I.t", 0, "h.ip.dst", "198.18.1.1") }},
		{name: "2 exact tables, hit, called", parse: l3, decls: tableDecl("t", "h.ip.dst", "exact", 4096) + tableDecl("u", "h.ip.src", "exact", 4096), body: "t.apply(); u.apply(); if (!h.ip.isValid()) { c.count(0); }", path: "t=fwd,u=fwd",
			entries: func(p *tableruntime.Program) error {
				if err := add(p, "I.t", 0, "h.ip.dst", "198.18.1.1"); err != nil {
					return err
				}
				return add(p, "I.u", 0, "h.ip.src", "198.18.0.10")
			}},
		{name: "2 exact tables, hit", parse: l3, decls: tableDecl("t", "h.ip.dst", "exact", 4096) + tableDecl("u", "h.ip.src", "exact", 4096), body: "t.apply(); u.apply();", path: "t=fwd,u=fwd",
			entries: func(p *tableruntime.Program) error {
				if err := add(p, "I.t", 0, "h.ip.dst", "198.18.1.1"); err != nil {
					return err
				}
				return add(p, "I.u", 0, "h.ip.src", "198.18.0.10")
			}},
		// LPM tables by entries
		{name: "LPM table, 1 route, hit", parse: l3, decls: tableDecl("t", "h.ip.dst", "lpm", 4096), body: "t.apply();", path: "t=fwd",
			entries: func(p *tableruntime.Program) error { return add(p, "I.t", 0, "h.ip.dst", "198.18.1.0/24") }},
		{name: "LPM table, 64 routes, hit", parse: l3, decls: tableDecl("t", "h.ip.dst", "lpm", 4096), body: "t.apply();", path: "t=fwd",
			entries: lpmEntries(63)},
		{name: "LPM table, 1024 routes, hit", parse: l3, decls: tableDecl("t", "h.ip.dst", "lpm", 4096), body: "t.apply();", path: "t=fwd", anchor: true,
			entries: lpmEntries(1023)},
		{name: "LPM table, 1024 routes, miss", parse: l3, decls: tableDecl("t", "h.ip.dst", "lpm", 4096), body: "t.apply();", path: "t=miss",
			entries: func(p *tableruntime.Program) error { return fill(p, "I.t", "h.ip.dst", "lpm", 1024) }},
		// ternary tables by entries (every slot is scanned)
		{name: "ternary table, 1 entry, hit", parse: l3, decls: tableDecl("t", "h.ip.dst", "ternary", 1024), body: "t.apply();", path: "t=fwd",
			entries: func(p *tableruntime.Program) error { return add(p, "I.t", 1, "h.ip.dst", "198.18.1.0&&&255.255.255.0") }},
		{name: "ternary table, 16 entries, hit", parse: l3, decls: tableDecl("t", "h.ip.dst", "ternary", 1024), body: "t.apply();", path: "t=fwd",
			entries: ternaryEntries(15)},
		{name: "ternary table, 128 entries, hit", parse: l3, decls: tableDecl("t", "h.ip.dst", "ternary", 1024), body: "t.apply();", path: "t=fwd",
			entries: ternaryEntries(127)},
		// const entries and keyless tables
		{name: "const table, 8 entries, miss", parse: l3, decls: constTable(8), body: "k.apply();", path: "k=miss"},
		{name: "const table, 32 entries, miss", parse: l3, decls: constTable(32), body: "k.apply();", path: "k=miss"},
		{name: "keyless table", parse: l3, decls: "table k { actions = { set; } default_action = set(7); }", body: "k.apply();"},
		{name: "exact table with a direct counter, hit", parse: l3,
			decls: "direct_counter(CounterType.packets_and_bytes) dc; table t { key = { h.ip.dst: exact; } actions = { fwd; NoAction; } default_action = NoAction(); counters = dc; }",
			body:  "t.apply();", path: "t=fwd",
			entries: func(p *tableruntime.Program) error { return add(p, "I.t", 0, "h.ip.dst", "198.18.1.1") }},
		// action profiles and selectors: a hit resolves a reference
		{name: "exact table of an action profile, hit (a member)", parse: l3, decls: profileTable("action_profile(32w64)", ""), body: "t.apply();", path: "t=fwd",
			entries: profileEntries(false)},
		{name: "exact table of an action selector, crc16 over 13 bytes, hit (a group of 4)", parse: l3,
			decls: profileTable("action_selector(HashAlgorithm.crc16, 32w64, 32w16)", "h.ip.src: selector; h.ip.dst: selector; h.ip.proto: selector; h.udp.sport: selector; h.udp.dport: selector;"),
			body:  "t.apply();", path: "t=fwd", entries: profileEntries(true)},
		{name: "exact table of an action selector, identity over 4 bytes, hit (a group of 4)", parse: l3,
			decls: profileTable("action_selector(HashAlgorithm.identity, 32w64, 32w16)", "h.ip.src: selector;"),
			body:  "t.apply();", path: "t=fwd", entries: profileEntries(true)},
		// PSA: the same headers and verdict through PSA_Switch, the
		// egress pipeline empty (not run) or parsing the packet again
		{name: "PSA: parse Ethernet, IPv4, UDP, sent", raw: psaProgram(false)},
		{name: "PSA: parse Ethernet, IPv4, UDP, sent; egress parses Ethernet, IPv4, UDP", raw: psaProgram(true)},
		// externs
		{name: "register read", parse: l3, body: idx + "r.read(m.v, m.idx); h.ip.id = m.v[15:0];"},
		{name: "register write", parse: l3, body: idx + "r.write(m.idx, (bit<32>)h.ip.ttl);"},
		{name: "counter", parse: l3, body: idx + "c.count(m.idx);"},
		{name: "meter", parse: l3, body: idx + "mt.execute_meter(m.idx, m.color); h.ip.tos = (bit<8>)m.color;", meter: "I.mt"},
		// CRCs: a key shorter than 8 bytes byte by byte; longer, blocks
		// of 8 by slicing and the rest byte by byte (backend.CRCWork)
		{name: "hash crc16 over 4 bytes", parse: l3, body: "hash(m.v, HashAlgorithm.crc16, 32w0, {h.ip.dst}, 32w65536); h.ip.id = m.v[15:0];"},
		{name: "hash crc16 over 13 bytes", parse: l3, body: "hash(m.v, HashAlgorithm.crc16, 32w0, " + tuple + ", 32w65536); h.ip.id = m.v[15:0];"},
		{name: "hash crc32 over 13 bytes", parse: l3, body: "hash(m.v, HashAlgorithm.crc32, 32w0, " + tuple + ", 64w0x100000000); h.ip.id = m.v[15:0];"},
		{name: "hash crc32 over 16 bytes", parse: l3, body: "hash(m.v, HashAlgorithm.crc32, 32w0, {h.ip.src, h.ip.dst, h.ip.dst, h.ip.src}, 64w0x100000000); h.ip.id = m.v[15:0];"},
		{name: "hash crc32 over 26 bytes", parse: l3, body: "hash(m.v, HashAlgorithm.crc32, 32w0, {h.ip.src, h.ip.dst, h.ip.proto, h.udp.sport, h.udp.dport, h.ip.dst, h.ip.src, h.ip.ttl, h.udp.len, h.udp.csum}, 64w0x100000000); h.ip.id = m.v[15:0];"},
		{name: "hash identity", parse: l3, body: "hash(m.v, HashAlgorithm.identity, 32w0, {h.ip.dst}, 64w0x100000000); h.ip.id = m.v[15:0];"},
		{name: "random", parse: l3, body: "random(m.v, 32w0, 32w999); h.ip.id = m.v[15:0];"},
		{name: "digest", parse: l3, body: "digest<D5>(32w1, " + tuple + ");"},
		{name: "clone (session not configured)", parse: l3, body: "clone(CloneType.I2E, 32w1);"},
		{name: "a clone never taken (the program can copy)", parse: l3, body: "if (!h.ip.isValid()) { clone(CloneType.I2E, 32w1); }"},
		{name: "multicast never taken (the program can copy)", parse: l3, body: "if (!h.udp.isValid()) { sm.mcast_grp = 1; }"},
		{name: "ingress_global_timestamp", parse: l3, body: "h.ip.id = sm.ingress_global_timestamp[15:0];"},
		{name: "@atomic register read-modify-write", parse: l3, body: idx + "@atomic { r.read(m.v, m.idx); r.write(m.idx, m.v + 1); }"},
		// checksums
		{name: "update_checksum over IPv4 (20 bytes)", parse: l3, body: "h.ip.ttl = h.ip.ttl - 1;", anchor: true,
			csum: "update_checksum(h.ip.isValid(), " + ipv4Fields + ", h.ip.csum, HashAlgorithm.csum16);"},
		{name: "update_checksum over 40 bytes", parse: l3, body: "h.ip.ttl = h.ip.ttl - 1;",
			csum: "update_checksum(h.ip.isValid(), {h.ip.version, h.ip.ihl, h.ip.tos, h.ip.len, h.ip.id, h.ip.flags, h.ip.frag, h.ip.ttl, h.ip.proto, h.ip.src, h.ip.dst, h.ip.src, h.ip.dst, h.udp.sport, h.udp.dport, h.udp.len, h.ip.dst, h.ip.src}, h.ip.csum, HashAlgorithm.csum16);"},
		{name: "update_checksum_with_payload over UDP, 86 bytes of payload", parse: l3, body: "h.udp.sport = 53;",
			csum: "update_checksum_with_payload(h.udp.isValid(), " + udpPseudo + ", h.udp.csum, HashAlgorithm.csum16);"},
		{name: "update_checksum_with_payload over UDP, 6 bytes of payload", parse: l3 + " a8 b8 a32 b32", body: "h.udp.sport = 53;",
			csum: "update_checksum_with_payload(h.udp.isValid(), " + udpPseudo + ", h.udp.csum, HashAlgorithm.csum16);"},
		{name: "verify_checksum over IPv4", parse: l3,
			ver: "verify_checksum(h.ip.isValid(), " + ipv4Fields + ", h.ip.csum, HashAlgorithm.csum16);"},
	}
	return cs
}

// psaProgram is a PSA program parsing Ethernet, IPv4 and UDP and sending
// the packet out of port 1; with egress, its egress pipeline parses and
// emits them again.
func psaProgram(egress bool) string {
	ep, ee := "state start { transition accept; }", ""
	if egress {
		ep, ee = "state start { p.extract(h.eth); p.extract(h.ip); p.extract(h.udp); transition accept; }", "p.emit(h);"
	}
	return `
#include <core.p4>
#include <psa.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t { bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags; bit<13> frag;
    bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst; }
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
struct H { eth_t eth; ipv4_t ip; udp_t udp; }
struct M { }
struct E { }
parser IP(packet_in p, out H h, inout M m, in psa_ingress_parser_input_metadata_t i, in E r, in E c) {
    state start { p.extract(h.eth); p.extract(h.ip); p.extract(h.udp); transition accept; }
}
control I(inout H h, inout M m, in psa_ingress_input_metadata_t i, inout psa_ingress_output_metadata_t o) {
    apply { send_to_port(o, (PortId_t)1); }
}
control ID(packet_out p, out E c, out E r, out E n, inout H h, in M m, in psa_ingress_output_metadata_t o) {
    apply { p.emit(h); }
}
parser EP(packet_in p, out H h, inout M m, in psa_egress_parser_input_metadata_t i, in E n, in E c, in E c2) {
    ` + ep + `
}
control EG(inout H h, inout M m, in psa_egress_input_metadata_t i, inout psa_egress_output_metadata_t o) { apply { } }
control ED(packet_out p, out E c, out E r, inout H h, in M m, in psa_egress_output_metadata_t o, in psa_egress_deparser_input_metadata_t d) {
    apply { ` + ee + ` }
}
IngressPipeline(IP(), I(), ID()) ip;
EgressPipeline(EP(), EG(), ED()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
`
}

// udpPseudo is UDP's checksum field list: the pseudo-header and the header.
const udpPseudo = "{h.ip.src, h.ip.dst, 8w0, h.ip.proto, h.udp.len, h.udp.sport, h.udp.dport, h.udp.len, 16w0}"

// profileTable is an exact table on the destination address implemented
// by impl (an action profile or selector named ap), with selector keys.
func profileTable(impl, selector string) string {
	return fmt.Sprintf("%s ap; table t { key = { h.ip.dst: exact; %s } actions = { fwd; NoAction; } default_action = NoAction(); implementation = ap; }", impl, selector)
}

// profileEntries points the frame's destination at a member, or at a group
// of 4 members.
func profileEntries(group bool) func(p *tableruntime.Program) error {
	return func(p *tableruntime.Program) error {
		var ids []uint32
		for id := uint32(1); id <= 4; id++ {
			if err := p.SetMember("I.ap", id, "I.fwd", []p4info.Arg{{Name: "port", Value: "1"}}); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		ref := p4info.Ref{ID: 1}
		if group {
			if err := p.SetGroup("I.ap", 1, ids); err != nil {
				return err
			}
			ref.Group = true
		}
		return p.AddRefEntry("I.t", []p4info.Match{{Field: "h.ip.dst", Value: "198.18.1.1"}}, ref, 0)
	}
}

func lpmEntries(others int) func(p *tableruntime.Program) error {
	return func(p *tableruntime.Program) error {
		if err := fill(p, "I.t", "h.ip.dst", "lpm", others); err != nil {
			return err
		}
		return add(p, "I.t", 0, "h.ip.dst", "198.18.1.0/24")
	}
}

func ternaryEntries(others int) func(p *tableruntime.Program) error {
	return func(p *tableruntime.Program) error {
		if err := fill(p, "I.t", "h.ip.dst", "ternary", others); err != nil {
			return err
		}
		return add(p, "I.t", 1, "h.ip.dst", "198.18.1.0&&&255.255.255.0")
	}
}

// constTable has n entries on the UDP destination port, none matching.
func constTable(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%d: fwd(1); ", 10000+i)
	}
	return fmt.Sprintf("table k { key = { h.udp.dport: exact; } actions = { fwd; NoAction; } const entries = { %s } default_action = NoAction(); }", b.String())
}
