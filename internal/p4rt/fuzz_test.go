package p4rt

import (
	"bytes"
	"testing"
)

// message is what the wire carries both ways.
type message interface {
	marshaler
	unmarshaler
}

// decoders are the messages the server reads off the wire (requests,
// stream messages) and those a client reads.
var decoders = []func() message{
	func() message { return &WriteRequest{} },
	func() message { return &ReadRequest{} },
	func() message { return &StreamRequest{} },
	func() message { return &SetPipelineRequest{} },
	func() message { return &GetPipelineRequest{} },
	func() message { return &ReadResponse{} },
	func() message { return &StreamResponse{} },
}

// FuzzWireDecoder feeds arbitrary bytes to the P4Runtime message decoders
// (and a client's P4Info to the pipeline check): nothing may panic, and a
// message that decodes must encode to bytes that decode to the same
// encoding again (the decoder and the encoder agree on every field).
func FuzzWireDecoder(f *testing.F) {
	entry := &TableEntry{TableID: 0x02000001, Priority: 10, Metadata: []byte("cookie"),
		Match:  []*FieldMatch{{FieldID: 1, Kind: "exact", Value: []byte{2, 0, 0, 0, 0, 0x0b}}, {FieldID: 2, Kind: "lpm", Value: []byte{198, 18, 0, 0}, PrefixLen: 16}},
		Action: &TableAction{Action: &Action{ActionID: 0x01000001, Params: []*Param{{ParamID: 1, Value: []byte{2}}}}}}
	seeds := []marshaler{
		&WriteRequest{DeviceID: 1, ElectionID: &Uint128{Low: 1}, Updates: []*Update{{Type: UpdateInsert, Entity: &Entity{TableEntry: entry}}}},
		&ReadRequest{DeviceID: 1, Entities: []*Entity{{TableEntry: &TableEntry{}}, {DigestEntry: &DigestEntry{}}}},
		&StreamRequest{Arbitration: &Arbitration{DeviceID: 1, ElectionID: &Uint128{High: 1, Low: 2}}},
		&StreamRequest{Packet: &Packet{Payload: []byte{1, 2, 3}, Metadata: []*PacketMetadata{{MetadataID: 1, Value: []byte{0, 1}}}}},
		&SetPipelineRequest{DeviceID: 1, ElectionID: &Uint128{Low: 1}, Action: ActionVerifyAndCommit, Config: &PipelineConfig{DeviceConfig: []byte("control c() { apply {} }"), Cookie: &Cookie{Cookie: 7}}},
		&GetPipelineRequest{DeviceID: 1, ResponseType: ResponseCookieOnly},
	}
	for i, m := range seeds {
		f.Add(uint8(i), marshal(m))
	}
	f.Add(uint8(0), []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		objectsOf(data) // a controller's P4Info: must not panic
		m := decoders[int(kind)%len(decoders)]()
		if m.unmarshal(data) != nil {
			return
		}
		once := marshal(m)
		again := decoders[int(kind)%len(decoders)]()
		if err := again.unmarshal(once); err != nil {
			t.Fatalf("%T: re-encoded message does not decode: %v", m, err)
		}
		if twice := marshal(again); !bytes.Equal(once, twice) {
			t.Fatalf("%T: encoding not stable:\n%x\n%x", m, once, twice)
		}
	})
}
