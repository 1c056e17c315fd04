package p4rt

// Hand-written P4Runtime v1 messages (p4lang/p4runtime v1.4:
// proto/p4/v1/p4runtime.proto, p4data.proto; google/rpc/status.proto;
// google/protobuf/any.proto), with the field numbers of the .proto files.
// Only the messages and fields edgenf serves are here;
// fields a client sends that are not listed are skipped.
//
// Most messages are tables: their fields' numbers in pb struct tags, encoded
// and decoded by tagged.go. The ones with oneofs or presence rules of their
// own keep an encoder and decoder beside them. Over 600 lines: one message
// after another; TestMessagesMatchP4RuntimePackage checks every one against
// the reference encoder (PyPI's p4runtime) with shared vectors.

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the hand-written messages (the tagged ones carry theirs
// in pb tags).
const (
	// Entity (oneof entity)
	fEntityExtern, fEntityTable, fEntityAPMember, fEntityAPGroup, fEntityMeter, fEntityDirectMeter,
	fEntityCounter, fEntityDirectCounter, fEntityPRE, fEntityValueSet, fEntityRegister, fEntityDigest protowire.Number = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12

	// TableEntry
	fTETableID, fTEMatch, fTEAction, fTEPriority, fTEControllerMetadata, fTEMeterConfig, fTECounterData,
	fTEIsDefault, fTEIdleTimeout, fTETimeSinceHit, fTEMetadata, fTEMeterCounterData, fTEConst protowire.Number = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13

	// FieldMatch
	fFMFieldID, fFMExact, fFMTernary, fFMLPM, fFMRange, fFMOptional, fFMOther protowire.Number = 1, 2, 3, 4, 6, 7, 100
	// FieldMatch.Exact/Ternary/LPM/Range/Optional
	fFMValue, fFMMask, fFMPrefixLen, fFMLow, fFMHigh protowire.Number = 1, 2, 2, 1, 2

	// TableAction
	fTAAction, fTAMemberID, fTAGroupID, fTAActionSet protowire.Number = 1, 2, 3, 4
	// DirectCounterEntry, DirectMeterEntry
	fDirectEntry, fDirectData protowire.Number = 1, 2

	// PacketReplicationEngineEntry
	fPREMulticast, fPREClone protowire.Number = 1, 2
	// Replica
	fReplicaEgressPort, fReplicaInstance, fReplicaPort protowire.Number = 1, 2, 3

	// P4Data (oneof data), P4StructLike
	fDataBitstring, fDataBool, fDataTuple, fDataStruct protowire.Number = 1, 3, 4, 5
	fStructMembers                                     protowire.Number = 1

	// StreamMessageRequest, StreamMessageResponse (oneof update), StreamError
	fStreamReqArb, fStreamReqPacket      protowire.Number = 1, 2
	fStreamReqDigestAck, fStreamReqOther protowire.Number = 3, 4
	fStreamRespArb, fStreamRespPacket    protowire.Number = 1, 2
	fStreamRespDigest, fStreamRespError  protowire.Number = 3, 6
	fStreamRespIdle                      protowire.Number = 4
	fSECode, fSEMessage                  protowire.Number = 1, 2
	fSEPacketOut, fSEDigestAck, fSEOther protowire.Number = 5, 6, 7
	fPOErrPacketOut, fDAErrAck           protowire.Number = 1, 1

	// ForwardingPipelineConfig
	fFPCP4Info, fFPCDeviceConfig, fFPCCookie protowire.Number = 1, 2, 3
)

// Enums.
const (
	UpdateUnspecified, UpdateInsert, UpdateModify, UpdateDelete = 0, 1, 2, 3

	AtomicityContinueOnError, AtomicityRollbackOnError, AtomicityDataplaneAtomic = 0, 1, 2

	ActionUnspecified, ActionVerify, ActionVerifyAndSave, ActionVerifyAndCommit, ActionCommit, ActionReconcileAndCommit = 0, 1, 2, 3, 4, 5

	ResponseAll, ResponseCookieOnly, ResponseP4InfoAndCookie, ResponseDeviceConfigAndCookie = 0, 1, 2, 3
)

// Uint128 is an election id.
type Uint128 struct {
	High uint64 `pb:"1"`
	Low  uint64 `pb:"2"`
}

func (m *Uint128) appendTo(e *enc)          { appendTagged(e, m) }
func (m *Uint128) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// Less orders election ids.
func (m Uint128) Less(o Uint128) bool { return m.High < o.High || (m.High == o.High && m.Low < o.Low) }

func (m Uint128) String() string {
	if m.High == 0 {
		return fmt.Sprint(m.Low)
	}
	return fmt.Sprintf("%d:%d", m.High, m.Low)
}

// WriteRequest is p4.v1.WriteRequest.
type WriteRequest struct {
	DeviceID   uint64    `pb:"1"`
	ElectionID *Uint128  `pb:"3"`
	Updates    []*Update `pb:"4"`
	Atomicity  int32     `pb:"5"`
	Role       string    `pb:"6"`
}

func (m *WriteRequest) appendTo(e *enc)          { appendTagged(e, m) }
func (m *WriteRequest) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// WriteResponse is empty.
type WriteResponse struct{}

func (m *WriteResponse) appendTo(e *enc)          {}
func (m *WriteResponse) unmarshal(b []byte) error { return walk(b, func(field) error { return nil }) }

// Update is p4.v1.Update.
type Update struct {
	Type   int32   `pb:"1"`
	Entity *Entity `pb:"2"`
}

func (m *Update) appendTo(e *enc)          { appendTagged(e, m) }
func (m *Update) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// Entity is p4.v1.Entity: one of its members is set. Other holds the field
// number of a member edgenf does not serve (action profiles, direct
// counters and meters, value sets, extern entries).
type Entity struct {
	TableEntry   *TableEntry
	MeterEntry   *MeterEntry
	CounterEntry *CounterEntry
	// DirectCounterEntry, DirectMeterEntry: the direct resources of one
	// table entry
	DirectCounterEntry *DirectEntry
	DirectMeterEntry   *DirectEntry
	PREEntry           *PREEntry
	RegisterEntry      *RegisterEntry
	DigestEntry        *DigestEntry
	// action profile members and groups (actprof.go)
	APMember *ActionProfileMember
	APGroup  *ActionProfileGroup
	Other    protowire.Number
}

var entityNames = map[protowire.Number]string{
	fEntityExtern: "extern_entry", fEntityTable: "table_entry", fEntityAPMember: "action_profile_member",
	fEntityAPGroup: "action_profile_group", fEntityMeter: "meter_entry", fEntityDirectMeter: "direct_meter_entry",
	fEntityCounter: "counter_entry", fEntityDirectCounter: "direct_counter_entry", fEntityPRE: "packet_replication_engine_entry",
	fEntityValueSet: "value_set_entry", fEntityRegister: "register_entry", fEntityDigest: "digest_entry",
}

func (m *Entity) appendTo(e *enc) {
	switch {
	case m.TableEntry != nil:
		e.msg(fEntityTable, m.TableEntry)
	case m.MeterEntry != nil:
		e.msg(fEntityMeter, m.MeterEntry)
	case m.CounterEntry != nil:
		e.msg(fEntityCounter, m.CounterEntry)
	case m.DirectCounterEntry != nil:
		e.msg(fEntityDirectCounter, m.DirectCounterEntry)
	case m.DirectMeterEntry != nil:
		e.msg(fEntityDirectMeter, m.DirectMeterEntry)
	case m.PREEntry != nil:
		e.msg(fEntityPRE, m.PREEntry)
	case m.RegisterEntry != nil:
		e.msg(fEntityRegister, m.RegisterEntry)
	case m.DigestEntry != nil:
		e.msg(fEntityDigest, m.DigestEntry)
	case m.APMember != nil:
		e.msg(fEntityAPMember, m.APMember)
	case m.APGroup != nil:
		e.msg(fEntityAPGroup, m.APGroup)
	case m.Other != 0:
		e.bytesAlways(m.Other, nil)
	}
}

func (m *Entity) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		*m = Entity{}
		switch f.num {
		case fEntityTable:
			m.TableEntry = &TableEntry{}
			return f.sub(m.TableEntry)
		case fEntityMeter:
			m.MeterEntry = &MeterEntry{}
			return f.sub(m.MeterEntry)
		case fEntityCounter:
			m.CounterEntry = &CounterEntry{}
			return f.sub(m.CounterEntry)
		case fEntityDirectCounter:
			m.DirectCounterEntry = &DirectEntry{}
			return f.sub(m.DirectCounterEntry)
		case fEntityDirectMeter:
			m.DirectMeterEntry = &DirectEntry{meter: true}
			return f.sub(m.DirectMeterEntry)
		case fEntityPRE:
			m.PREEntry = &PREEntry{}
			return f.sub(m.PREEntry)
		case fEntityRegister:
			m.RegisterEntry = &RegisterEntry{}
			return f.sub(m.RegisterEntry)
		case fEntityDigest:
			m.DigestEntry = &DigestEntry{}
			return f.sub(m.DigestEntry)
		case fEntityAPMember:
			m.APMember = &ActionProfileMember{}
			return f.sub(m.APMember)
		case fEntityAPGroup:
			m.APGroup = &ActionProfileGroup{}
			return f.sub(m.APGroup)
		default:
			m.Other = f.num
		}
		return nil
	})
}

// TableEntry is p4.v1.TableEntry (action profiles and meter counter data
// are not served: Unsupported names what was set).
type TableEntry struct {
	TableID         uint32
	Match           []*FieldMatch
	Action          *TableAction
	Priority        int32
	IsDefaultAction bool
	// MeterConfig, CounterData: the entry's direct meter and counter (in a
	// read request, set to ask for them)
	MeterConfig   *MeterConfig
	CounterData   *CounterData
	IdleTimeoutNs int64
	// TimeSinceLastHit: in a read request, set (to anything) to ask for it.
	TimeSinceLastHit *int64
	Metadata         []byte
	Const            bool
	Unsupported      string
}

// elapsed is TableEntry.IdleTimeout (time_since_last_hit).
type elapsed struct {
	Ns int64 `pb:"1"`
}

func (m *elapsed) appendTo(e *enc)          { appendTagged(e, m) }
func (m *elapsed) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// IdleTimeoutNotification is p4.v1.IdleTimeoutNotification.
type IdleTimeoutNotification struct {
	TableEntry []*TableEntry `pb:"1"`
	Timestamp  int64         `pb:"2"` // ns since the epoch
}

func (m *IdleTimeoutNotification) appendTo(e *enc)          { appendTagged(e, m) }
func (m *IdleTimeoutNotification) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

func (m *TableEntry) appendTo(e *enc) {
	e.varint(fTETableID, uint64(m.TableID))
	for _, fm := range m.Match {
		e.msg(fTEMatch, fm)
	}
	if m.Action != nil {
		e.msg(fTEAction, m.Action)
	}
	e.int32(fTEPriority, m.Priority)
	if m.MeterConfig != nil {
		e.msg(fTEMeterConfig, m.MeterConfig)
	}
	if m.CounterData != nil {
		e.msg(fTECounterData, m.CounterData)
	}
	e.bool(fTEIsDefault, m.IsDefaultAction)
	e.int64(fTEIdleTimeout, m.IdleTimeoutNs)
	if m.TimeSinceLastHit != nil {
		e.msg(fTETimeSinceHit, &elapsed{*m.TimeSinceLastHit})
	}
	e.bytes(fTEMetadata, m.Metadata)
	e.bool(fTEConst, m.Const)
}

func (m *TableEntry) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		switch f.num {
		case fTETableID:
			return set(&m.TableID, uint32(f.v), f.want(protowire.VarintType))
		case fTEMatch:
			fm := &FieldMatch{}
			m.Match = append(m.Match, fm)
			return f.sub(fm)
		case fTEAction:
			m.Action = &TableAction{}
			return f.sub(m.Action)
		case fTEPriority:
			return set(&m.Priority, int32(f.v), f.want(protowire.VarintType))
		case fTEIsDefault:
			return set(&m.IsDefaultAction, f.v != 0, f.want(protowire.VarintType))
		case fTEMetadata:
			v, err := f.raw()
			return set(&m.Metadata, v, err)
		case fTEConst:
			return set(&m.Const, f.v != 0, f.want(protowire.VarintType))
		case fTEMeterConfig:
			m.MeterConfig = &MeterConfig{}
			return f.sub(m.MeterConfig)
		case fTECounterData:
			m.CounterData = &CounterData{}
			return f.sub(m.CounterData)
		case fTEMeterCounterData:
			m.Unsupported = "meter_counter_data"
		case fTEIdleTimeout:
			return set(&m.IdleTimeoutNs, int64(f.v), f.want(protowire.VarintType))
		case fTETimeSinceHit:
			el := &elapsed{}
			m.TimeSinceLastHit = &el.Ns
			return f.sub(el)
		case fTEControllerMetadata:
			if f.v != 0 {
				m.Unsupported = "controller_metadata (deprecated; use metadata)"
			}
		}
		return nil
	})
}

// FieldMatch is p4.v1.FieldMatch; Kind is the oneof member set
// ("exact", "ternary", "lpm", "range", "optional"; "other" or "" otherwise).
type FieldMatch struct {
	FieldID   uint32
	Kind      string
	Value     []byte // exact, ternary, lpm, optional
	Mask      []byte // ternary
	PrefixLen int32  // lpm
	Low, High []byte // range
}

func (m *FieldMatch) appendTo(e *enc) {
	e.varint(fFMFieldID, uint64(m.FieldID))
	var s enc
	switch m.Kind {
	case "exact":
		s.bytes(fFMValue, m.Value)
		e.bytesAlways(fFMExact, s.b)
	case "optional":
		s.bytes(fFMValue, m.Value)
		e.bytesAlways(fFMOptional, s.b)
	case "ternary":
		s.bytes(fFMValue, m.Value)
		s.bytes(fFMMask, m.Mask)
		e.bytesAlways(fFMTernary, s.b)
	case "lpm":
		s.bytes(fFMValue, m.Value)
		s.int32(fFMPrefixLen, m.PrefixLen)
		e.bytesAlways(fFMLPM, s.b)
	case "range":
		s.bytes(fFMLow, m.Low)
		s.bytes(fFMHigh, m.High)
		e.bytesAlways(fFMRange, s.b)
	}
}

func (m *FieldMatch) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		switch f.num {
		case fFMFieldID:
			return set(&m.FieldID, uint32(f.v), f.want(protowire.VarintType))
		case fFMExact, fFMOptional, fFMTernary, fFMLPM, fFMRange:
			m.Kind = map[protowire.Number]string{fFMExact: "exact", fFMOptional: "optional", fFMTernary: "ternary", fFMLPM: "lpm", fFMRange: "range"}[f.num]
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			kind := f.num
			return walk(f.b, func(g field) error {
				switch {
				case kind == fFMRange && g.num == fFMLow:
					v, err := g.raw()
					return set(&m.Low, v, err)
				case kind == fFMRange && g.num == fFMHigh:
					v, err := g.raw()
					return set(&m.High, v, err)
				case kind != fFMRange && g.num == fFMValue:
					v, err := g.raw()
					return set(&m.Value, v, err)
				case kind == fFMTernary && g.num == fFMMask:
					v, err := g.raw()
					return set(&m.Mask, v, err)
				case kind == fFMLPM && g.num == fFMPrefixLen:
					return set(&m.PrefixLen, int32(g.v), g.want(protowire.VarintType))
				}
				return nil
			})
		case fFMOther:
			m.Kind = "other"
		}
		return nil
	})
}

// TableAction is p4.v1.TableAction: one of a direct action, an action
// profile member or group, or a one-shot action set (actprof.go).
type TableAction struct {
	Action    *Action
	MemberID  *uint32
	GroupID   *uint32
	ActionSet *ActionSet
}

func (m *TableAction) appendTo(e *enc) {
	switch {
	case m.Action != nil:
		e.msg(fTAAction, m.Action)
	case m.MemberID != nil:
		e.varintAlways(fTAMemberID, uint64(*m.MemberID))
	case m.GroupID != nil:
		e.varintAlways(fTAGroupID, uint64(*m.GroupID))
	case m.ActionSet != nil:
		e.msg(fTAActionSet, m.ActionSet)
	}
}

func (m *TableAction) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		*m = TableAction{}
		switch f.num {
		case fTAAction:
			m.Action = &Action{}
			return f.sub(m.Action)
		case fTAMemberID, fTAGroupID:
			if err := f.want(protowire.VarintType); err != nil {
				return err
			}
			v := uint32(f.v)
			if f.num == fTAMemberID {
				m.MemberID = &v
			} else {
				m.GroupID = &v
			}
		case fTAActionSet:
			m.ActionSet = &ActionSet{}
			return f.sub(m.ActionSet)
		}
		return nil
	})
}

// Action is p4.v1.Action.
type Action struct {
	ActionID uint32   `pb:"1"`
	Params   []*Param `pb:"4"`
}

func (m *Action) appendTo(e *enc)          { appendTagged(e, m) }
func (m *Action) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// Param is p4.v1.Action.Param.
type Param struct {
	ParamID uint32 `pb:"2"`
	Value   []byte `pb:"3"`
}

func (m *Param) appendTo(e *enc)          { appendTagged(e, m) }
func (m *Param) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// Index is p4.v1.Index (nil: unset, a wildcard).
type Index struct {
	Index int64 `pb:"1"`
}

func (m *Index) appendTo(e *enc)          { appendTagged(e, m) }
func (m *Index) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// MeterConfig is p4.v1.MeterConfig.
type MeterConfig struct {
	CIR    int64 `pb:"1"`
	CBurst int64 `pb:"2"`
	PIR    int64 `pb:"3"`
	PBurst int64 `pb:"4"`
}

func (m *MeterConfig) appendTo(e *enc)          { appendTagged(e, m) }
func (m *MeterConfig) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// MeterEntry is p4.v1.MeterEntry (without counter_data).
type MeterEntry struct {
	MeterID uint32       `pb:"1"`
	Index   *Index       `pb:"2"`
	Config  *MeterConfig `pb:"3"`
}

func (m *MeterEntry) appendTo(e *enc)          { appendTagged(e, m) }
func (m *MeterEntry) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// CounterData is p4.v1.CounterData.
type CounterData struct {
	ByteCount   int64 `pb:"1"`
	PacketCount int64 `pb:"2"`
}

func (m *CounterData) appendTo(e *enc)          { appendTagged(e, m) }
func (m *CounterData) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// CounterEntry is p4.v1.CounterEntry.
type CounterEntry struct {
	CounterID uint32       `pb:"1"`
	Index     *Index       `pb:"2"`
	Data      *CounterData `pb:"3"`
}

func (m *CounterEntry) appendTo(e *enc)          { appendTagged(e, m) }
func (m *CounterEntry) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// DirectEntry is p4.v1.DirectCounterEntry (Counter) or
// p4.v1.DirectMeterEntry (Meter; without its counter_data): a table
// entry's direct resource, whose data is field 2 of either.
type DirectEntry struct {
	TableEntry *TableEntry
	Counter    *CounterData
	Meter      *MeterConfig
	meter      bool // decoding a DirectMeterEntry
}

func (m *DirectEntry) appendTo(e *enc) {
	if m.TableEntry != nil {
		e.msg(fDirectEntry, m.TableEntry)
	}
	if m.Counter != nil {
		e.msg(fDirectData, m.Counter)
	}
	if m.Meter != nil {
		e.msg(fDirectData, m.Meter)
	}
}

func (m *DirectEntry) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		switch {
		case f.num == fDirectEntry:
			m.TableEntry = &TableEntry{}
			return f.sub(m.TableEntry)
		case f.num == fDirectData && m.meter:
			m.Meter = &MeterConfig{}
			return f.sub(m.Meter)
		case f.num == fDirectData:
			m.Counter = &CounterData{}
			return f.sub(m.Counter)
		}
		return nil
	})
}

// PREEntry is p4.v1.PacketReplicationEngineEntry.
type PREEntry struct {
	MulticastGroup *MulticastGroupEntry
	CloneSession   *CloneSessionEntry
}

func (m *PREEntry) appendTo(e *enc) {
	if m.MulticastGroup != nil {
		e.msg(fPREMulticast, m.MulticastGroup)
	}
	if m.CloneSession != nil {
		e.msg(fPREClone, m.CloneSession)
	}
}

func (m *PREEntry) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		switch f.num {
		case fPREMulticast:
			m.MulticastGroup, m.CloneSession = &MulticastGroupEntry{}, nil
			return f.sub(m.MulticastGroup)
		case fPREClone:
			m.CloneSession, m.MulticastGroup = &CloneSessionEntry{}, nil
			return f.sub(m.CloneSession)
		}
		return nil
	})
}

// Replica is p4.v1.Replica: the port as bytes (Port) or, deprecated, as a
// number (EgressPort, used when Port is nil).
type Replica struct {
	EgressPort uint32
	Port       []byte
	Instance   uint32
}

func (m *Replica) appendTo(e *enc) {
	if m.Port != nil {
		e.bytesAlways(fReplicaPort, m.Port)
	} else {
		e.varint(fReplicaEgressPort, uint64(m.EgressPort))
	}
	e.varint(fReplicaInstance, uint64(m.Instance))
}

func (m *Replica) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		switch f.num {
		case fReplicaEgressPort:
			return set(&m.EgressPort, uint32(f.v), f.want(protowire.VarintType))
		case fReplicaPort:
			v, err := f.raw()
			if v == nil {
				v = []byte{}
			}
			return set(&m.Port, v, err)
		case fReplicaInstance:
			return set(&m.Instance, uint32(f.v), f.want(protowire.VarintType))
		}
		return nil
	})
}

// MulticastGroupEntry is p4.v1.MulticastGroupEntry.
type MulticastGroupEntry struct {
	GroupID  uint32     `pb:"1"`
	Replicas []*Replica `pb:"2"`
}

func (m *MulticastGroupEntry) appendTo(e *enc)          { appendTagged(e, m) }
func (m *MulticastGroupEntry) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// CloneSessionEntry is p4.v1.CloneSessionEntry.
type CloneSessionEntry struct {
	SessionID         uint32     `pb:"1"`
	Replicas          []*Replica `pb:"2"`
	ClassOfService    uint32     `pb:"3"`
	PacketLengthBytes int32      `pb:"4"`
}

func (m *CloneSessionEntry) appendTo(e *enc)          { appendTagged(e, m) }
func (m *CloneSessionEntry) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// P4Data is p4.v1.P4Data: a bitstring, a bool or a struct of members
// (Kind names the oneof member; "other" for members edgenf does not use).
type P4Data struct {
	Kind      string // "bitstring", "bool", "struct", "tuple", "other"
	Bitstring []byte
	Bool      bool
	Members   []*P4Data
}

func (m *P4Data) appendTo(e *enc) {
	switch m.Kind {
	case "bitstring":
		e.bytesAlways(fDataBitstring, m.Bitstring)
	case "bool":
		e.boolAlways(fDataBool, m.Bool)
	case "struct", "tuple":
		var s enc
		for _, d := range m.Members {
			s.msg(fStructMembers, d)
		}
		n := fDataStruct
		if m.Kind == "tuple" {
			n = fDataTuple
		}
		e.bytesAlways(n, s.b)
	}
}

func (m *P4Data) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		switch f.num {
		case fDataBitstring:
			m.Kind = "bitstring"
			v, err := f.raw()
			return set(&m.Bitstring, v, err)
		case fDataBool:
			m.Kind = "bool"
			return set(&m.Bool, f.v != 0, f.want(protowire.VarintType))
		case fDataStruct, fDataTuple:
			m.Kind = "struct"
			if f.num == fDataTuple {
				m.Kind = "tuple"
			}
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			return walk(f.b, func(g field) error {
				if g.num == fStructMembers {
					d := &P4Data{}
					m.Members = append(m.Members, d)
					return g.sub(d)
				}
				return nil
			})
		default:
			m.Kind = "other"
		}
		return nil
	})
}

// RegisterEntry is p4.v1.RegisterEntry.
type RegisterEntry struct {
	RegisterID uint32  `pb:"1"`
	Index      *Index  `pb:"2"`
	Data       *P4Data `pb:"3"`
}

func (m *RegisterEntry) appendTo(e *enc)          { appendTagged(e, m) }
func (m *RegisterEntry) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// DigestConfig is p4.v1.DigestEntry.Config.
type DigestConfig struct {
	MaxTimeoutNs int64 `pb:"1"`
	MaxListSize  int32 `pb:"2"`
	AckTimeoutNs int64 `pb:"3"`
}

func (m *DigestConfig) appendTo(e *enc)          { appendTagged(e, m) }
func (m *DigestConfig) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// DigestEntry is p4.v1.DigestEntry.
type DigestEntry struct {
	DigestID uint32        `pb:"1"`
	Config   *DigestConfig `pb:"2"`
}

func (m *DigestEntry) appendTo(e *enc)          { appendTagged(e, m) }
func (m *DigestEntry) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// ReadRequest is p4.v1.ReadRequest.
type ReadRequest struct {
	DeviceID uint64    `pb:"1"`
	Entities []*Entity `pb:"2"`
	Role     string    `pb:"3"`
}

func (m *ReadRequest) appendTo(e *enc)          { appendTagged(e, m) }
func (m *ReadRequest) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// ReadResponse is p4.v1.ReadResponse.
type ReadResponse struct {
	Entities []*Entity `pb:"1"`
}

func (m *ReadResponse) appendTo(e *enc)          { appendTagged(e, m) }
func (m *ReadResponse) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// PacketMetadata is p4.v1.PacketMetadata.
type PacketMetadata struct {
	MetadataID uint32 `pb:"1"`
	Value      []byte `pb:"2"`
}

func (m *PacketMetadata) appendTo(e *enc)          { appendTagged(e, m) }
func (m *PacketMetadata) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// Packet is p4.v1.PacketOut and p4.v1.PacketIn (the same fields).
type Packet struct {
	Payload  []byte            `pb:"1"`
	Metadata []*PacketMetadata `pb:"2"`
}

func (m *Packet) appendTo(e *enc)          { appendTagged(e, m) }
func (m *Packet) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// DigestListAck is p4.v1.DigestListAck.
type DigestListAck struct {
	DigestID uint32 `pb:"1"`
	ListID   uint64 `pb:"2"`
}

func (m *DigestListAck) appendTo(e *enc)          { appendTagged(e, m) }
func (m *DigestListAck) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// DigestList is p4.v1.DigestList.
type DigestList struct {
	DigestID  uint32    `pb:"1"`
	ListID    uint64    `pb:"2"`
	Data      []*P4Data `pb:"3"`
	Timestamp int64     `pb:"4"`
}

func (m *DigestList) appendTo(e *enc)          { appendTagged(e, m) }
func (m *DigestList) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// Status is google.rpc.Status with its details as Any (type URL, bytes).
type Status struct {
	Code    int32  `pb:"1"`
	Message string `pb:"2"`
	Details []*Any `pb:"3"`
}

func (m *Status) appendTo(e *enc)          { appendTagged(e, m) }
func (m *Status) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// Any is google.protobuf.Any.
type Any struct {
	TypeURL string `pb:"1"`
	Value   []byte `pb:"2"`
}

func (m *Any) appendTo(e *enc)          { appendTagged(e, m) }
func (m *Any) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// Role is p4.v1.Role (its config is not read).
type Role struct {
	ID   uint64 `pb:"1"`
	Name string `pb:"3"`
}

func (m *Role) appendTo(e *enc)          { appendTagged(e, m) }
func (m *Role) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// Arbitration is p4.v1.MasterArbitrationUpdate.
type Arbitration struct {
	DeviceID   uint64   `pb:"1"`
	Role       *Role    `pb:"2"`
	ElectionID *Uint128 `pb:"3"`
	Status     *Status  `pb:"4"`
}

func (m *Arbitration) appendTo(e *enc)          { appendTagged(e, m) }
func (m *Arbitration) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// StreamRequest is p4.v1.StreamMessageRequest.
type StreamRequest struct {
	Arbitration *Arbitration
	Packet      *Packet
	DigestAck   *DigestListAck
	Other       bool
}

func (m *StreamRequest) appendTo(e *enc) {
	switch {
	case m.Arbitration != nil:
		e.msg(fStreamReqArb, m.Arbitration)
	case m.Packet != nil:
		e.msg(fStreamReqPacket, m.Packet)
	case m.DigestAck != nil:
		e.msg(fStreamReqDigestAck, m.DigestAck)
	}
}

func (m *StreamRequest) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		*m = StreamRequest{}
		switch f.num {
		case fStreamReqArb:
			m.Arbitration = &Arbitration{}
			return f.sub(m.Arbitration)
		case fStreamReqPacket:
			m.Packet = &Packet{}
			return f.sub(m.Packet)
		case fStreamReqDigestAck:
			m.DigestAck = &DigestListAck{}
			return f.sub(m.DigestAck)
		case fStreamReqOther:
			m.Other = true
		}
		return nil
	})
}

// StreamError is p4.v1.StreamError; PacketOut is set for an error about
// a packet-out, DigestAck about an ack.
type StreamError struct {
	CanonicalCode int32
	Message       string
	PacketOut     *Packet
	DigestAck     *DigestListAck
}

func (m *StreamError) appendTo(e *enc) {
	e.int32(fSECode, m.CanonicalCode)
	e.string(fSEMessage, m.Message)
	var s enc
	switch {
	case m.PacketOut != nil:
		s.msg(fPOErrPacketOut, m.PacketOut)
		e.bytesAlways(fSEPacketOut, s.b)
	case m.DigestAck != nil:
		s.msg(fDAErrAck, m.DigestAck)
		e.bytesAlways(fSEDigestAck, s.b)
	default:
		e.bytesAlways(fSEOther, nil)
	}
}

func (m *StreamError) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		switch f.num {
		case fSECode:
			return set(&m.CanonicalCode, int32(f.v), f.want(protowire.VarintType))
		case fSEMessage:
			return set(&m.Message, string(f.b), f.want(protowire.BytesType))
		case fSEPacketOut:
			m.PacketOut = &Packet{}
			return walk(f.b, func(g field) error {
				if g.num == fPOErrPacketOut {
					return g.sub(m.PacketOut)
				}
				return nil
			})
		}
		return nil
	})
}

// StreamResponse is p4.v1.StreamMessageResponse.
type StreamResponse struct {
	Arbitration *Arbitration
	Packet      *Packet
	Digest      *DigestList
	IdleTimeout *IdleTimeoutNotification
	Error       *StreamError
}

func (m *StreamResponse) appendTo(e *enc) {
	switch {
	case m.Arbitration != nil:
		e.msg(fStreamRespArb, m.Arbitration)
	case m.Packet != nil:
		e.msg(fStreamRespPacket, m.Packet)
	case m.Digest != nil:
		e.msg(fStreamRespDigest, m.Digest)
	case m.IdleTimeout != nil:
		e.msg(fStreamRespIdle, m.IdleTimeout)
	case m.Error != nil:
		e.msg(fStreamRespError, m.Error)
	}
}

func (m *StreamResponse) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		*m = StreamResponse{}
		switch f.num {
		case fStreamRespArb:
			m.Arbitration = &Arbitration{}
			return f.sub(m.Arbitration)
		case fStreamRespPacket:
			m.Packet = &Packet{}
			return f.sub(m.Packet)
		case fStreamRespDigest:
			m.Digest = &DigestList{}
			return f.sub(m.Digest)
		case fStreamRespIdle:
			m.IdleTimeout = &IdleTimeoutNotification{}
			return f.sub(m.IdleTimeout)
		case fStreamRespError:
			m.Error = &StreamError{}
			return f.sub(m.Error)
		}
		return nil
	})
}

// Cookie is ForwardingPipelineConfig.Cookie.
type Cookie struct {
	Cookie uint64 `pb:"1"`
}

func (m *Cookie) appendTo(e *enc)          { appendTagged(e, m) }
func (m *Cookie) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// PipelineConfig is p4.v1.ForwardingPipelineConfig. P4Info holds the
// encoded p4.config.v1.P4Info (p4info.go); HasP4Info tells an empty
// P4Info from none.
type PipelineConfig struct {
	P4Info       []byte
	HasP4Info    bool
	DeviceConfig []byte
	Cookie       *Cookie
}

func (m *PipelineConfig) appendTo(e *enc) {
	if m.HasP4Info {
		e.bytesAlways(fFPCP4Info, m.P4Info)
	}
	e.bytes(fFPCDeviceConfig, m.DeviceConfig)
	if m.Cookie != nil {
		e.msg(fFPCCookie, m.Cookie)
	}
}

func (m *PipelineConfig) unmarshal(b []byte) error {
	return walk(b, func(f field) error {
		switch f.num {
		case fFPCP4Info:
			m.HasP4Info = true
			v, err := f.raw()
			return set(&m.P4Info, v, err)
		case fFPCDeviceConfig:
			v, err := f.raw()
			return set(&m.DeviceConfig, v, err)
		case fFPCCookie:
			m.Cookie = &Cookie{}
			return f.sub(m.Cookie)
		}
		return nil
	})
}

// SetPipelineRequest is p4.v1.SetForwardingPipelineConfigRequest.
type SetPipelineRequest struct {
	DeviceID   uint64          `pb:"1"`
	ElectionID *Uint128        `pb:"3"`
	Action     int32           `pb:"4"`
	Config     *PipelineConfig `pb:"5"`
	Role       string          `pb:"6"`
}

func (m *SetPipelineRequest) appendTo(e *enc)          { appendTagged(e, m) }
func (m *SetPipelineRequest) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// SetPipelineResponse is empty.
type SetPipelineResponse struct{ WriteResponse }

// GetPipelineRequest is p4.v1.GetForwardingPipelineConfigRequest.
type GetPipelineRequest struct {
	DeviceID     uint64 `pb:"1"`
	ResponseType int32  `pb:"2"`
}

func (m *GetPipelineRequest) appendTo(e *enc)          { appendTagged(e, m) }
func (m *GetPipelineRequest) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// GetPipelineResponse is p4.v1.GetForwardingPipelineConfigResponse.
type GetPipelineResponse struct {
	Config *PipelineConfig `pb:"1"`
}

func (m *GetPipelineResponse) appendTo(e *enc)          { appendTagged(e, m) }
func (m *GetPipelineResponse) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// P4Error is p4.v1.Error, one per update in a failed Write's status
// details.
type P4Error struct {
	CanonicalCode int32  `pb:"1"`
	Message       string `pb:"2"`
	Space         string `pb:"3"`
}

func (m *P4Error) appendTo(e *enc)          { appendTagged(e, m) }
func (m *P4Error) unmarshal(b []byte) error { return unmarshalTagged(b, m) }

// CapabilitiesRequest is empty.
type CapabilitiesRequest struct{ WriteResponse }

// CapabilitiesResponse is p4.v1.CapabilitiesResponse.
type CapabilitiesResponse struct {
	Version string `pb:"1"`
}

func (m *CapabilitiesResponse) appendTo(e *enc)          { appendTagged(e, m) }
func (m *CapabilitiesResponse) unmarshal(b []byte) error { return unmarshalTagged(b, m) }
