package stf

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/perf"
	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/p4info"
)

type spRecord struct {
	reason, arg, inPort uint32
	data                []byte
}

// spReader collects what the program sends to the slow path.
func spReader(t *testing.T, r *Runner) func() []spRecord {
	rd, err := perf.NewReader(r.Coll.Maps["enf_punt_ring"], 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return func() []spRecord {
		var out []spRecord
		for {
			rd.SetDeadline(time.Now().Add(50 * time.Millisecond))
			rec, err := rd.Read()
			if err != nil {
				return out
			}
			var hdr struct{ Magic, Cube, InPort, Reason, Arg, PktLen, Ifindex, Hook uint32 }
			if err := binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &hdr); err != nil || hdr.Magic != 0x65646766 {
				t.Errorf("bad punt record %x", rec.RawSample)
				continue
			}
			data := rec.RawSample[32:]
			if l := int(min(hdr.PktLen, 1536)); len(data) > l {
				data = data[:l]
			}
			out = append(out, spRecord{reason: hdr.Reason, arg: hdr.Arg, inPort: hdr.InPort, data: data})
		}
	}
}

func TestSlowPathMessages(t *testing.T) {
	res := compileFile(t, "../testdata/slowpath.p4")
	sp := res.Info.Edgenf.SlowPath
	if sp == nil || len(sp.Digests) != 1 || len(sp.Logs) != 2 || sp.PacketIn == nil || sp.PacketOut == nil {
		t.Fatalf("slow path model: %+v", sp)
	}
	if len(res.Info.Digests) != 1 || res.Info.Digests[0].Preamble.ID>>24 != ir.PrefixDigest || res.Info.Digests[0].Preamble.Name != "learn_t" {
		t.Fatalf("P4Info digests: %+v", res.Info.Digests)
	}
	if len(res.Info.ControllerPacketMetadata) != 2 || res.Info.ControllerPacketMetadata[0].Preamble.ID>>24 != 0x04 {
		t.Fatalf("P4Info controller headers: %+v", res.Info.ControllerPacketMetadata)
	}
	src := []byte{0x02, 0, 0, 0, 0, 0x0a}
	dst := []byte{0x02, 0, 0, 0, 0, 0x0b}
	frame := func(et uint16) []byte {
		b := append(append(append([]byte(nil), dst...), src...), byte(et>>8), byte(et))
		return append(b, make([]byte, 46)...)
	}
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) {
			r := load(t, res, hook)
			read := spReader(t, r)

			// a normal packet: forwarded, two digests (smac miss, meta.l) and a log line
			out, err := r.Send(2, frame(0x0800))
			if err != nil || out == nil || out.Port != 1 {
				t.Fatalf("forward: %+v %v", out, err)
			}
			recs := read()
			var digests, logs []spRecord
			for _, rec := range recs {
				switch rec.reason {
				case ir.PuntDigest:
					digests = append(digests, rec)
				case ir.PuntLog:
					logs = append(logs, rec)
				default:
					t.Errorf("unexpected reason %d", rec.reason)
				}
			}
			if len(digests) != 2 || len(logs) != 1 {
				t.Fatalf("got %d digests, %d logs: %+v", len(digests), len(logs), recs)
			}
			d := sp.DigestAt(digests[0].arg)
			fv, err := d.Decode(digests[0].data)
			if err != nil {
				t.Fatal(err)
			}
			if fv[0].Value != "02:00:00:00:00:0a" || fv[1].Value != "2" || digests[0].inPort != 2 {
				t.Errorf("learn digest: %+v", fv)
			}
			fv, _ = sp.DigestAt(digests[1].arg).Decode(digests[1].data)
			if fv[0].Value != "02:00:00:00:00:0b" || fv[1].Value != "7" {
				t.Errorf("struct digest: %+v", fv)
			}
			if s, err := sp.LogAt(logs[0].arg).Render(logs[0].data); err != nil || s != "hello" {
				t.Errorf("log: %q %v", s, err)
			}
			// a short message is refused, not misread
			if _, err := d.Decode(digests[0].data[:3]); err == nil {
				t.Error("short digest decoded")
			}

			// packet-in: the CPU port, with the packet_in header in front
			out, err = r.Send(3, frame(0x9999))
			if err != nil || out == nil || out.Port != CPUPort {
				t.Fatalf("packet-in: %+v %v", out, err)
			}
			read()

			// packet-out: from the CPU port, the packet_out header says where
			po, err := sp.PacketOut.Encode(map[string]string{"egress_port": "3"})
			if err != nil {
				t.Fatal(err)
			}
			out, err = r.Send(ir.DefaultCPUPort, append(po, frame(0x0800)...))
			if err != nil || out == nil || out.Port != 3 {
				t.Fatalf("packet-out: %+v %v", out, err)
			}
			if !bytes.HasPrefix(out.Data, dst) {
				t.Errorf("packet-out kept its header: %x", out.Data[:16])
			}
			logs = nil
			for _, rec := range read() {
				if rec.reason == ir.PuntLog {
					logs = append(logs, rec)
				}
			}
			if len(logs) != 1 {
				t.Fatalf("packet-out logs: %+v", logs)
			}
			if s, _ := sp.LogAt(logs[0].arg).Render(logs[0].data); s != "packet-out to port 3" {
				t.Errorf("log: %q", s)
			}
			// counters
			st, err := readSPStats(r)
			if err != nil {
				t.Fatal(err)
			}
			if st[ir.SPDigestSent] != 4 || st[ir.SPLogSent] != 3 || st[ir.SPDigestLost] != 0 {
				t.Errorf("stats %v", st)
			}
		})
	}
}

func readSPStats(r *Runner) ([]uint64, error) {
	out := make([]uint64, ir.SPStats)
	m := r.Coll.Maps[ir.SlowPathStatsMap]
	for i := range out {
		var per []uint64
		if err := m.Lookup(uint32(i), &per); err != nil {
			return nil, err
		}
		for _, v := range per {
			out[i] += v
		}
	}
	return out, nil
}

func TestPacketInHeader(t *testing.T) {
	h := &p4info.CtrlHeaderLayout{Name: "packet_in", Bytes: 2, Fields: []p4info.CtrlField{
		{ID: 1, Name: "ingress_port", Width: 9}, {ID: 2, Name: "_pad", Width: 7, BitOffset: 9}}}
	b, err := h.Encode(map[string]string{"ingress_port": "3"})
	if err != nil || !bytes.Equal(b, []byte{0x01, 0x80}) {
		t.Fatalf("encode: %x %v", b, err)
	}
	m, rest, err := h.Decode([]byte{0x01, 0x80, 0xaa})
	if err != nil || m["ingress_port"] != "3" || !bytes.Equal(rest, []byte{0xaa}) {
		t.Fatalf("decode: %v %x %v", m, rest, err)
	}
	for _, bad := range []map[string]string{{"port": "1"}, {"ingress_port": "512"}, {"ingress_port": "x"}} {
		if _, err := h.Encode(bad); err == nil {
			t.Errorf("%v encoded", bad)
		}
	}
	if _, _, err := h.Decode([]byte{1}); err == nil {
		t.Error("short frame decoded")
	}
}

func TestSlowPathCompileErrors(t *testing.T) {
	prog := func(decls, body string) string {
		return `#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct H { eth_t eth; }
struct M { }
` + decls + `
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) { state start { p.extract(h.eth); transition accept; } }
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { ` + body + ` } }
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
`
	}
	cases := []struct{ decls, body, want string }{
		{`struct big_t { bit<2048> a; bit<8> b; }`, `big_t x; digest(1, x);`, "digest big_t carries 257 bytes; edgenf delivers at most 256"},
		{``, `digest(1, {h.eth.s, sm.ingress_port});`, "must have a struct type"},
		{``, `digest(1, h.eth.s);`, "must have a struct type"},
		{``, `log_msg("a {} b {}", {h.eth.s});`, "2 {} placeholders for 1 values"},
		{`@controller_header header pi_t { bit<8> x; }`, ``, "@controller_header needs a name"},
	}
	for _, c := range cases {
		_, err := p4.Compile(context.Background(), p4.Options{Path: "bad.p4", Source: []byte(prog(c.decls, c.body)), NoObject: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s / %s: %v, want %q", c.decls, c.body, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), "bad.p4:") {
			t.Errorf("error without a position: %v", err)
		}
	}
}
