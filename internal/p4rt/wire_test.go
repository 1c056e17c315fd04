package p4rt

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4/p4info"
	"google.golang.org/grpc/codes"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The bytes below are computed by hand from p4runtime.proto's field
// numbers (tag = field<<3 | wire type; varints 7 bits a byte, low first).
func TestWireEncodingByHand(t *testing.T) {
	three := int64(3)
	cases := []struct {
		name string
		m    marshaler
		hex  string
	}{
		// Uint128{low: 1}: field 2 varint
		{"election id", &Uint128{Low: 1}, "10 01"},
		// P4Data: bitstring (1, bytes) 0x00; bool (3, varint) false is
		// still written: it is a oneof member
		{"bitstring", &P4Data{Kind: "bitstring", Bitstring: []byte{0}}, "0a 01 00"},
		{"bool", &P4Data{Kind: "bool"}, "18 00"},
		// MasterArbitrationUpdate{device_id 1, election_id {low 5},
		// status {code 6 ALREADY_EXISTS, message "x"}} in a
		// StreamMessageResponse (arbitration = 1)
		{"arbitration", &StreamResponse{Arbitration: &Arbitration{DeviceID: 1, ElectionID: &Uint128{Low: 5}, Status: &Status{Code: int32(codes.AlreadyExists), Message: "x"}}},
			"0a 0d  08 01  1a 02 10 05  22 05 08 06 12 01 78"},
		// WriteRequest{device_id 1, election_id {low 1}, updates [INSERT
		// table_entry{table_id 0x02000001, match [{field_id 1, exact
		// {value 0x0a}}], action {action {action_id 0x01000002, params
		// [{param_id 1, value 0x01}]}}}]}
		{"write", &WriteRequest{DeviceID: 1, ElectionID: &Uint128{Low: 1}, Updates: []*Update{{Type: UpdateInsert, Entity: &Entity{TableEntry: &TableEntry{
			TableID: 0x02000001,
			Match:   []*FieldMatch{{FieldID: 1, Kind: "exact", Value: []byte{0x0a}}},
			Action:  &TableAction{Action: &Action{ActionID: 0x01000002, Params: []*Param{{ParamID: 1, Value: []byte{1}}}}},
		}}}}},
			"08 01  1a 02 10 01  22 24  08 01  12 20  12 1e" +
				" 08 81 80 80 10" + // table_id
				" 12 07 08 01 12 03 0a 01 0a" + // match
				" 1a 0e 0a 0c 08 82 80 80 08 22 05 10 01 1a 01 01"}, // action
		// StreamMessageResponse idle_timeout_notification (4) {table_entry
		// (1) {table_id 1, idle_timeout_ns (9) 1, time_since_last_hit (10)
		// {elapsed_ns 3}}, timestamp (2) 2}
		{"idle timeout", &StreamResponse{IdleTimeout: &IdleTimeoutNotification{TableEntry: []*TableEntry{{TableID: 1, IdleTimeoutNs: 1, TimeSinceLastHit: &three}}, Timestamp: 2}},
			"22 0c  0a 08 08 01 48 01 52 02 08 03  10 02"},
		// CapabilitiesResponse{"1.4.0"}
		{"capabilities", &CapabilitiesResponse{Version: "1.4.0"}, "0a 05 31 2e 34 2e 30"},
		// LPM match: field_id 2, lpm (4) {value c6 12 00 00, prefix_len 24}
		{"lpm", &FieldMatch{FieldID: 2, Kind: "lpm", Value: []byte{198, 18, 0, 0}, PrefixLen: 24}, "08 02 22 08 0a 04 c6 12 00 00 10 18"},
		// Replica with port bytes (3) 0x02 and instance (2) 1
		{"replica", &Replica{Port: []byte{2}, Instance: 1}, "1a 01 02 10 01"},
		// a negative int32 is a 10-byte varint
		{"negative priority", &TableEntry{Priority: -1}, "20 ff ff ff ff ff ff ff ff ff 01"},
	}
	for _, c := range cases {
		got := marshal(c.m)
		want := unhex(t, c.hex)
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got % x\nwant % x", c.name, got, want)
		}
	}

	// and back
	var w WriteRequest
	if err := w.unmarshal(marshal(cases[4].m)); err != nil {
		t.Fatal(err)
	}
	te := w.Updates[0].Entity.TableEntry
	if w.DeviceID != 1 || w.ElectionID.Low != 1 || te.TableID != 0x02000001 || te.Match[0].Kind != "exact" ||
		te.Match[0].Value[0] != 0x0a || te.Action.Action.ActionID != 0x01000002 || te.Action.Action.Params[0].Value[0] != 1 {
		t.Fatalf("decoded %+v %+v", w, te)
	}
	var sr StreamResponse
	if err := sr.unmarshal(marshal(cases[3].m)); err != nil || sr.Arbitration.Status.Code != 6 || sr.Arbitration.ElectionID.Low != 5 {
		t.Fatalf("arbitration %+v %v", sr.Arbitration, err)
	}
	// a truncated message is an error, not a panic
	if err := w.unmarshal(unhex(t, "22 24 08")); err == nil {
		t.Fatal("truncated message decoded")
	}
}

func TestP4InfoEncoding(t *testing.T) {
	info := &p4info.P4Info{
		PkgInfo: p4info.PkgInfo{Arch: "v1model"},
		Tables: []*p4info.Table{{Preamble: p4info.Preamble{ID: 0x02000001, Name: "I.t", Alias: "t"},
			MatchFields: []p4info.MatchField{{ID: 1, Name: "h.a", Bitwidth: 8, MatchType: "EXACT"}},
			ActionRefs:  []p4info.ActionRef{{ID: 0x01000001}}, Size: "16", IdleTimeoutBehavior: "NOTIFY_CONTROL"}},
		Actions: []*p4info.Action{{Preamble: p4info.Preamble{ID: 0x01000001, Name: "I.a", Alias: "a"}}},
	}
	got, err := info.ProtoBinary()
	if err != nil {
		t.Fatal(err)
	}
	// pkg_info (1) {arch (5) "v1model"}
	pkg := "0a 09 2a 07 76 31 6d 6f 64 65 6c"
	// tables (2) {preamble (1) {id, name "I.t", alias "t"}, match_fields
	// (2) {id 1, name "h.a", bitwidth 8, match_type EXACT (2)}, action_refs
	// (3) {id}, size (8) 16, idle_timeout_behavior (9) NOTIFY_CONTROL (1)}
	table := "12 27" +
		" 0a 0d 08 81 80 80 10 12 03 49 2e 74 1a 01 74" +
		" 12 0b 08 01 12 03 68 2e 61 20 08 28 02" +
		" 1a 05 08 81 80 80 08" +
		" 40 10 48 01"
	action := "1a 0f 0a 0d 08 81 80 80 08 12 03 49 2e 61 1a 01 61"
	if want := unhex(t, pkg+table+action); !bytes.Equal(got, want) {
		t.Fatalf("P4Info\n got % x\nwant % x", got, want)
	}
	objs, err := objectsOf(got)
	if err != nil || len(objs) != 2 || objs[0] != (object{"table", 0x02000001, "I.t"}) || objs[1] != (object{"action", 0x01000001, "I.a"}) {
		t.Fatalf("objects %+v %v", objs, err)
	}
	if err := checkP4Info(got, info); err != nil {
		t.Fatal(err)
	}
	info2 := *info
	info2.Tables = []*p4info.Table{{Preamble: p4info.Preamble{ID: 0x02000002, Name: "I.t"}, Size: "16"}}
	b2 := mustProto(t, &info2)
	if err := checkP4Info(b2, info); err == nil || !strings.Contains(err.Error(), "0x02000002") {
		t.Fatalf("wrong id accepted: %v", err)
	}
}

func TestParseDevices(t *testing.T) {
	m, tenants, err := ParseDevices("sw1=1, sw2=0x10@red")
	if err != nil || m[1] != "sw1" || m[16] != "sw2" || tenants[16] != "red" || len(tenants) != 1 {
		t.Fatalf("%v %v %v", m, tenants, err)
	}
	for _, bad := range []string{"sw1", "sw1=0", "sw1=1,sw2=1", "sw1=1,sw1=2", "=3", "sw1=1@", "sw1=1@r d", "sw1=@red"} {
		if _, _, err := ParseDevices(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
