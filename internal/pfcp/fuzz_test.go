package pfcp

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzChecked feeds arbitrary datagrams to the decoder. It must never
// panic; it must answer every malformed one with a *Error (whose cause is
// one a receiver may send: none, Version Not Supported, or a rejection);
// and a message it accepts must encode to octets it accepts again as the
// same message.
func FuzzChecked(f *testing.F) {
	f.Add(unhex(f, heartbeatHex))
	f.Add(unhex(f, establishmentHex))
	f.Add(MarshalBundle(establishment(), &Message{Type: HeartbeatResponse, IEs: IEs{U32IE(IERecoveryTimeStamp, 1)}}))
	f.Add([]byte{0x21, 0x34, 0, 12, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		msg, err := Checked(b)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is not a *pfcp.Error: %v", err)
			}
			if e.Cause != 0 && !e.VersionNotSupported() && e.Cause < CauseRejected {
				t.Fatalf("malformed message answered with an acceptance cause: %v", err)
			}
			_ = e.Error()
			return
		}
		again, err := Checked(msg.Marshal())
		if err != nil {
			t.Fatalf("re-encoded message refused: %v", err)
		}
		if !reflect.DeepEqual(normalise(again), normalise(msg)) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", msg, again)
		}
	})
}

// normalise makes empty and nil IE contents compare equal.
func normalise(m *Message) *Message {
	var walk func(IEs)
	walk = func(l IEs) {
		for _, ie := range l {
			if len(ie.Value) == 0 {
				ie.Value = nil
			}
			if len(ie.Children) == 0 {
				ie.Children = nil
			}
			walk(ie.Children)
		}
	}
	walk(m.IEs)
	if len(m.IEs) == 0 {
		m.IEs = nil
	}
	return m
}

// FuzzTypedValues feeds arbitrary octets to every typed parser: no panics,
// and what parses re-encodes to octets that parse the same.
func FuzzTypedValues(f *testing.F) {
	f.Add(uint8(0), []byte{0x0d, 1})
	f.Add(uint8(2), []byte{0x06, 198, 19, 0, 5})
	f.Add(uint8(3), []byte{1, 0, 0, 5, 'p', 'e', 'r', 'm', 'i'})
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		type codec struct {
			parse func([]byte) (any, error)
			enc   func(any) []byte
		}
		codecs := []codec{
			{func(b []byte) (any, error) { return ParseFTEID(b) }, func(v any) []byte { return v.(FTEID).IE().Value }},
			{func(b []byte) (any, error) { return ParseFSEID(b) }, func(v any) []byte { return v.(FSEID).IE().Value }},
			{func(b []byte) (any, error) { return ParseUEIPAddress(b) }, func(v any) []byte { return v.(UEIPAddress).IE().Value }},
			{func(b []byte) (any, error) { return ParseSDFFilter(b) }, func(v any) []byte { return v.(SDFFilter).IE().Value }},
			{func(b []byte) (any, error) { return ParseOuterHeaderCreation(b) }, func(v any) []byte { return v.(OuterHeaderCreation).IE().Value }},
			{func(b []byte) (any, error) { return ParseVolume(b) }, func(v any) []byte { return v.(Volume).IE(IEVolumeMeasurement).Value }},
			{func(b []byte) (any, error) { return ParseNodeID(b) }, func(v any) []byte { return v.(NodeID).IE().Value }},
		}
		cd := codecs[int(which)%len(codecs)]
		v, err := cd.parse(b)
		if err != nil {
			return
		}
		enc := cd.enc(v)
		w, err := cd.parse(enc)
		if err != nil {
			t.Fatalf("re-encoded %x refused: %v", enc, err)
		}
		if !reflect.DeepEqual(v, w) && !bytes.Equal(enc, cd.enc(w)) {
			t.Fatalf("round trip changed %+v into %+v", v, w)
		}
	})
}
