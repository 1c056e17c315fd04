package pfcp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// unhex reads hex with spaces and comments ("# ..." to the end of a line).
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var clean strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.ReplaceAll(line, " ", ""))
	}
	b, err := hex.DecodeString(strings.TrimSpace(clean.String()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Vectors written octet by octet from the figures of TS 29.244 (clause 7.2.2
// for headers, 8.1.1 for the IE header, 8.2.x for each IE's contents).
var (
	// Heartbeat Request (7.4.2.1): header without SEID, Recovery Time Stamp.
	heartbeatHex = `
20 01 000c      # version 1, no flags; type 1; length 12
000102 00       # sequence number 258, spare
0060 0004 e6a1b2c3 # Recovery Time Stamp (96), NTP seconds`

	// Session Establishment Request (7.5.2): one uplink PDR with F-TEID
	// CHOOSE and a QER, one downlink PDR on the UE address, their FARs, a
	// QER and a URR with a volume threshold.
	establishmentHex = `
21 32 014c                  # version 1, S=1; type 50; length 332
0000000000000000            # SEID 0: the UPF has none yet
000007 00                   # sequence number 7
003c 0005 00 c6120001       # Node ID: IPv4 198.18.0.1
0039 000d 02 0000000000000011 c6120001 # CP F-SEID: V4, SEID 0x11, 198.18.0.1
0001 0032                   # Create PDR
  0038 0002 0001            #   PDR ID 1
  001d 0004 00000064        #   Precedence 100
  0002 000b                 #   PDI
    0014 0001 00            #     Source Interface: Access
    0015 0002 0d 01         #     F-TEID: V4, CH, CHID; Choose ID 1
  005f 0001 00              #   Outer Header Removal: GTP-U/UDP/IPv4
  006c 0004 00000001        #   FAR ID 1
  006d 0004 00000001        #   QER ID 1
0001 005a                   # Create PDR
  0038 0002 0002            #   PDR ID 2
  001d 0004 000000c8        #   Precedence 200
  0002 0038                 #   PDI
    0014 0001 01            #     Source Interface: Core
    005d 0005 06 c6130005   #     UE IP Address: V4, destination, 198.19.0.5
    0017 0026 0100 0022     #     SDF Filter: FD, flow description of 34 octets
      7065726d6974206f75742031372066726f6d20616e7920746f2061737369676e6564 # "permit out 17 from any to assigned"
  006c 0004 00000002        #   FAR ID 2
  0051 0004 00000001        #   URR ID 1
0003 0016                   # Create FAR
  006c 0004 00000001        #   FAR ID 1
  002c 0001 02              #   Apply Action: FORW
  0004 0005                 #   Forwarding Parameters
    002a 0001 01            #     Destination Interface: Core
0003 0031                   # Create FAR
  006c 0004 00000002        #   FAR ID 2
  002c 0001 02              #   Apply Action: FORW
  0004 0020                 #   Forwarding Parameters
    002a 0001 00            #     Destination Interface: Access
    0054 000a 0100 000004d2 c6120002 # Outer Header Creation: GTP-U/UDP/IPv4, TEID 1234, 198.18.0.2
    0016 0009 08 696e7465726e6574 # Network Instance "internet" (DNS labels: the 8 is the first label's length)
0006 0020                   # Create URR
  0051 0004 00000001        #   URR ID 1
  003e 0001 02              #   Measurement Method: VOLUM
  0025 0002 0200            #   Reporting Triggers: VOLTH
  001f 0009 01 0000000000002710 # Volume Threshold: TOVOL 10000
0007 001b                   # Create QER
  006d 0004 00000001        #   QER ID 1
  0019 0001 00              #   Gate Status: UL open, DL open
  001a 000a 0000002710 0000004e20 # MBR: UL 10000 kbit/s, DL 20000 kbit/s`
)

func establishment() *Message {
	fd := "permit out 17 from any to assigned"
	return &Message{Type: SessionEstablishmentRequest, HasSEID: true, Seq: 7, IEs: IEs{
		NodeID{Addr: netip.MustParseAddr("198.18.0.1")}.IE(),
		FSEID{SEID: 0x11, IPv4: netip.MustParseAddr("198.18.0.1")}.IE(),
		Group(IECreatePDR, U16IE(IEPDRID, 1), U32IE(IEPrecedence, 100),
			Group(IEPDI, U8IE(IESourceInterface, InterfaceAccess),
				FTEID{Choose: true, ChooseV4: true, HasChooseID: true, ChooseID: 1}.IE()),
			U8IE(IEOuterHeaderRemoval, OHRGTPUUDPIPv4), U32IE(IEFARID, 1), U32IE(IEQERID, 1)),
		Group(IECreatePDR, U16IE(IEPDRID, 2), U32IE(IEPrecedence, 200),
			Group(IEPDI, U8IE(IESourceInterface, InterfaceCore),
				UEIPAddress{IPv4: netip.MustParseAddr("198.19.0.5"), Destination: true}.IE(),
				SDFFilter{FlowDescription: fd}.IE()),
			U32IE(IEFARID, 2), U32IE(IEURRID, 1)),
		Group(IECreateFAR, U32IE(IEFARID, 1), FlagsIE(IEApplyAction, uint32(ActionFORW), 1),
			Group(IEForwardingParameters, U8IE(IEDestinationInterface, InterfaceCore))),
		Group(IECreateFAR, U32IE(IEFARID, 2), FlagsIE(IEApplyAction, uint32(ActionFORW), 1),
			Group(IEForwardingParameters, U8IE(IEDestinationInterface, InterfaceAccess),
				OuterHeaderCreation{Desc: OHCGTPUUDPIPv4, TEID: 1234, IPv4: netip.MustParseAddr("198.18.0.2")}.IE(),
				NewIE(IENetworkInstance, EncodeAPN("internet")))),
		Group(IECreateURR, U32IE(IEURRID, 1), U8IE(IEMeasurementMethod, MeasureVOLUM),
			FlagsIE(IEReportingTriggers, TriggerVOLTH, 2), Volume{HasTotal: true, Total: 10000}.IE(IEVolumeThreshold)),
		Group(IECreateQER, U32IE(IEQERID, 1), U8IE(IEGateStatus, 0), BitRate{Uplink: 10000, Downlink: 20000}.IE(IEMBR)),
	}}
}

func TestVectorsByteExact(t *testing.T) {
	hb := &Message{Type: HeartbeatRequest, Seq: 258, IEs: IEs{U32IE(IERecoveryTimeStamp, 0xe6a1b2c3)}}
	for _, tc := range []struct {
		name string
		msg  *Message
		hex  string
	}{
		{"heartbeat", hb, heartbeatHex},
		{"establishment", establishment(), establishmentHex},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			if got := tc.msg.Marshal(); !bytes.Equal(got, want) {
				t.Fatalf("marshal:\n got %x\nwant %x", got, want)
			}
			msg, err := Checked(want)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(msg, tc.msg) {
				t.Fatalf("parse:\n got %+v\nwant %+v", msg, tc.msg)
			}
		})
	}
}

func TestTypedValuesRoundTrip(t *testing.T) {
	cases := []struct {
		ie    *IE
		parse func([]byte) (any, error)
		want  any
	}{
		{NodeID{FQDN: "upf.edge.example"}.IE(), func(b []byte) (any, error) { return ParseNodeID(b) }, NodeID{FQDN: "upf.edge.example"}},
		{NodeID{Addr: netip.MustParseAddr("2001:db8::1")}.IE(), func(b []byte) (any, error) { return ParseNodeID(b) }, NodeID{Addr: netip.MustParseAddr("2001:db8::1")}},
		{FSEID{SEID: 1 << 60, IPv4: netip.MustParseAddr("198.18.0.1"), IPv6: netip.MustParseAddr("2001:db8::1")}.IE(),
			func(b []byte) (any, error) { return ParseFSEID(b) },
			FSEID{SEID: 1 << 60, IPv4: netip.MustParseAddr("198.18.0.1"), IPv6: netip.MustParseAddr("2001:db8::1")}},
		{FTEID{TEID: 0xdeadbeef, IPv6: netip.MustParseAddr("2001:db8::9")}.IE(), func(b []byte) (any, error) { return ParseFTEID(b) },
			FTEID{TEID: 0xdeadbeef, IPv6: netip.MustParseAddr("2001:db8::9")}},
		{UEIPAddress{IPv6: netip.MustParseAddr("2001:db8:1:2::"), HasPrefixLen: true, PrefixLen: 64, Destination: true}.IE(),
			func(b []byte) (any, error) { return ParseUEIPAddress(b) },
			UEIPAddress{IPv6: netip.MustParseAddr("2001:db8:1:2::"), HasPrefixLen: true, PrefixLen: 64, Destination: true}},
		{UEIPAddress{ChooseV4: true, ChooseV6: true}.IE(), func(b []byte) (any, error) { return ParseUEIPAddress(b) },
			UEIPAddress{ChooseV4: true, ChooseV6: true}},
		{SDFFilter{FlowDescription: "permit out ip from any to assigned", HasToS: true, ToS: 0xb8, ToSMask: 0xfc, HasFlowLabel: true, FlowLabel: 0xabcde, HasFilterID: true, FilterID: 9}.IE(),
			func(b []byte) (any, error) { return ParseSDFFilter(b) },
			SDFFilter{FlowDescription: "permit out ip from any to assigned", HasToS: true, ToS: 0xb8, ToSMask: 0xfc, HasFlowLabel: true, FlowLabel: 0xabcde, HasFilterID: true, FilterID: 9}},
		{OuterHeaderCreation{Desc: OHCGTPUUDPIPv6, TEID: 7, IPv6: netip.MustParseAddr("2001:db8::7")}.IE(),
			func(b []byte) (any, error) { return ParseOuterHeaderCreation(b) },
			OuterHeaderCreation{Desc: OHCGTPUUDPIPv6, TEID: 7, IPv6: netip.MustParseAddr("2001:db8::7")}},
		{Volume{HasTotal: true, Total: 1, HasUplink: true, Uplink: 2, HasDownlinkPkts: true, DownlinkPkts: 3}.IE(IEVolumeMeasurement),
			func(b []byte) (any, error) { return ParseVolume(b) },
			Volume{HasTotal: true, Total: 1, HasUplink: true, Uplink: 2, HasDownlinkPkts: true, DownlinkPkts: 3}},
		{BitRate{Uplink: 1 << 39, Downlink: 5}.IE(IEMBR), func(b []byte) (any, error) { return ParseBitRate(b) }, BitRate{Uplink: 1 << 39, Downlink: 5}},
	}
	for _, tc := range cases {
		b := tc.ie.Marshal()
		msgs, err := parseIEs(b, 0)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("%s: %v", tc.ie.Type, err)
		}
		got, err := tc.parse(msgs[0].Value)
		if err != nil {
			t.Fatalf("%s: %v", tc.ie.Type, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v want %+v", tc.ie.Type, got, tc.want)
		}
		if err := checkIE(msgs[0]); err != nil {
			t.Errorf("%s: check: %v", tc.ie.Type, err)
		}
	}
}

func TestNTPTimes(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	if got := FromNTPSeconds(NTPSeconds(at)); !got.Equal(at) {
		t.Fatalf("era 0: %v", got)
	}
	later := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := FromNTPSeconds(NTPSeconds(later)); !got.Equal(later) {
		t.Fatalf("era 1: %v", got)
	}
}

func TestBundle(t *testing.T) {
	a := &Message{Type: HeartbeatRequest, Seq: 1, IEs: IEs{U32IE(IERecoveryTimeStamp, 5)}}
	b := &Message{Type: HeartbeatResponse, Seq: 2, IEs: IEs{U32IE(IERecoveryTimeStamp, 6)}}
	msgs, err := Parse(MarshalBundle(a, b))
	if err != nil || len(msgs) != 2 || !reflect.DeepEqual(msgs[0], a) || !reflect.DeepEqual(msgs[1], b) {
		t.Fatalf("bundle: %v %+v", err, msgs)
	}
}

// causeOf checks a datagram and returns the cause and offending IE the
// specification prescribes for it.
func causeOf(t *testing.T, b []byte) (Cause, IEType) {
	t.Helper()
	_, err := Checked(b)
	if err == nil {
		return CauseAccepted, 0
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error is not a *pfcp.Error: %v", err)
	}
	return e.Cause, e.Offending
}

func TestErrorsFollowTheSpecification(t *testing.T) {
	good := establishment()
	without := func(drop IEType) []byte {
		m := *good
		m.IEs = nil
		for _, ie := range good.IEs {
			if ie.Type != drop {
				m.IEs = append(m.IEs, ie)
			}
		}
		return m.Marshal()
	}
	// A mandatory IE missing, at the top and inside a grouped IE.
	if c, off := causeOf(t, without(IEFSEID)); c != CauseMandatoryIEMissing || off != IEFSEID {
		t.Errorf("no F-SEID: %v %v", c, off)
	}
	noPDI := *good
	noPDI.IEs = append(IEs{}, good.IEs...)
	noPDI.IEs[2] = Group(IECreatePDR, U16IE(IEPDRID, 1), U32IE(IEPrecedence, 100))
	if c, off := causeOf(t, noPDI.Marshal()); c != CauseMandatoryIEMissing || off != IEPDI {
		t.Errorf("no PDI: %v %v", c, off)
	}
	// A mandatory IE too short for its fixed part.
	short := *good
	short.IEs = append(IEs{}, good.IEs...)
	short.IEs[1] = NewIE(IEFSEID, []byte{2, 0, 0})
	if c, off := causeOf(t, short.Marshal()); c != CauseMandatoryIEIncorrect || off != IEFSEID {
		t.Errorf("short F-SEID: %v %v", c, off)
	}
	// A conditional IE present but wrong is held to the same standard.
	badOHC := *good
	badOHC.IEs = append(IEs{}, good.IEs...)
	badOHC.IEs[5] = Group(IECreateFAR, U32IE(IEFARID, 2), FlagsIE(IEApplyAction, uint32(ActionFORW), 1),
		Group(IEForwardingParameters, U8IE(IEDestinationInterface, 0), NewIE(IEOuterHeaderCreation, []byte{1, 0, 0})))
	if c, off := causeOf(t, badOHC.Marshal()); c != CauseMandatoryIEIncorrect || off != IEOuterHeaderCreation {
		t.Errorf("bad OHC: %v %v", c, off)
	}
	// An IE overrunning its container: the message length is wrong.
	b := good.Marshal()
	b[len(b)-11]++ // the low octet of the MBR's length
	if c, _ := causeOf(t, b); c != CauseInvalidLength {
		t.Errorf("overrun: %v", c)
	}
	// A message longer than the datagram.
	b = good.Marshal()
	if c, _ := causeOf(t, b[:len(b)-1]); c != CauseInvalidLength {
		t.Errorf("truncated: %v", c)
	}
	// Too short for a header: nothing to answer.
	if c, _ := causeOf(t, []byte{0x20, 1, 0}); c != 0 {
		t.Errorf("short header: %v", c)
	}
	// Another version: Version Not Supported.
	b = good.Marshal()
	b[0] = 2<<5 | 1
	if _, err := Checked(b); err == nil || !AsError(err).VersionNotSupported() {
		t.Errorf("version 2: %v", err)
	}
	// A session message without a SEID.
	noSEID := *good
	noSEID.HasSEID = false
	if c, _ := causeOf(t, noSEID.Marshal()); c != CauseMandatoryIEIncorrect {
		t.Errorf("no SEID: %v", c)
	}
}

func TestDiscardsWhatTheSpecificationDiscards(t *testing.T) {
	m := establishment()
	m.IEs = append(m.IEs,
		NewIE(9999, []byte{1, 2, 3}),                          // unknown
		&IE{Type: 40000, Enterprise: 18681, Value: []byte{1}}, // vendor-specific
		NodeID{Addr: netip.MustParseAddr("198.18.9.9")}.IE(),  // a repeated Node ID
		NewIE(IEUserPlaneInactivityTimer, []byte{1}),          // optional, too short
		U32IE(IEQERID, 5)) // unexpected at this level
	got, err := Checked(m.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.IEs, establishment().IEs) {
		t.Fatalf("kept what should be discarded: %d IEs", len(got.IEs))
	}
	n, _ := ParseNodeID(got.IEs.Find(IENodeID).Value)
	if n.Addr.String() != "198.18.0.1" {
		t.Fatalf("the first Node ID must count: %v", n)
	}
}

func TestDeepNestingRefused(t *testing.T) {
	ie := Group(IECreatePDR)
	for range 20 {
		ie = Group(IEPDI, ie)
	}
	m := &Message{Type: HeartbeatRequest, IEs: IEs{ie}}
	if _, err := ParseMessage(m.Marshal()); err == nil {
		t.Fatal("20 levels of grouped IEs parsed")
	}
}

// Timer values (8.2.78): the finest unit that holds the duration, rounded
// up; beyond 310 hours, infinite.
func TestTimerIE(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		b    byte
		back time.Duration
	}{
		{0, 0x00, 0}, {time.Second, 0x01, 2 * time.Second}, {62 * time.Second, 0x1f, 62 * time.Second},
		{63 * time.Second, 0x22, 2 * time.Minute}, {31 * time.Minute, 0x3f, 31 * time.Minute},
		{32 * time.Minute, 0x44, 40 * time.Minute}, {24 * time.Hour, 0x78, 24 * time.Hour},
		{40 * time.Hour, 0x84, 40 * time.Hour}, {400 * time.Hour, 0xe0, -1},
	} {
		ie := TimerIE(IEGracefulReleasePeriod, tc.d)
		if len(ie.Value) != 1 || ie.Value[0] != tc.b {
			t.Fatalf("%v encoded %x, want %02x", tc.d, ie.Value, tc.b)
		}
		if back, err := ie.Timer(); err != nil || back != tc.back {
			t.Fatalf("%02x decoded %v %v, want %v", tc.b, back, err, tc.back)
		}
	}
	// Undefined units count as minutes; an empty value is an error.
	if d, _ := NewIE(IEGracefulReleasePeriod, []byte{0xa3}).Timer(); d != 3*time.Minute {
		t.Fatalf("unit 5: %v", d)
	}
	if _, err := NewIE(IEGracefulReleasePeriod, nil).Timer(); err == nil {
		t.Fatal("an empty timer decoded")
	}
}
