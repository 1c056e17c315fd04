package upf

// Mirrors of upf.bpf.c's map layouts and constants; change both together.

// Map capacities (those that follow max_sessions: sizes.go).
const (
	maxNeigh     = 4096
	listMax      = 32
	ruleQERs     = 2
	ruleURRs     = 4
	portRelease  = 63
	releaseMagic = 0x75706672
)

// Punt reasons.
const (
	puntEcho = iota + 1
	puntErrInd
	puntNoTEID
	puntBuff
	puntNOCP
	puntURR
	puntNeigh
	puntNeighIn
	puntEndMarker
)

// Counters of upf_stats, in order. The fast path does not write the first
// four: they are derived from the rules' counter blocks (counters.go).
var statNames = []string{
	"ul_packets", "ul_bytes", "dl_packets", "dl_bytes",
	"drop_no_session", "drop_no_rule", "drop_far", "drop_gate", "drop_mbr", "drop_quota",
	"drop_malformed", "drop_not_gtp", "drop_too_big",
	"buffered", "no_teid", "echo_requests", "error_indications_in", "end_markers_in",
	"neighbour_misses", "arp_replies", "na_replies",
	"duplicated", "duplicated_slow", "duplicates_lost",
}

// Port roles.
const (
	roleN3 = 1
	roleN6 = 2
	roleN9 = 3
)

type kPort struct {
	MAC  [6]byte
	Has4 uint8
	Has6 uint8
	Role uint8
	_    [3]uint8
	IP4  [4]byte
	GW4  [4]byte
	IP6  [16]byte
	GW6  [16]byte
}

// kList is a TEID's or UE address's rules, in precedence order: a copy of
// the first one's line (Head.N: how many rules) and its index. The rules
// after the first are in a kMore: in the slot arrays a side array at the
// same index (upf_teid_more, upf_ue_more), in the hash maps the rest of the
// value (kHList).
type kList struct {
	Head kLine
	Rule uint32
}

// kMore is a list's rules after the first (Rule[i]: the list's rule i+1).
type kMore struct {
	Rule [listMax - 1]uint32
}

// kHList is a whole list: a hash map's value, and what the controller
// writes to the slot arrays in two parts.
type kHList struct {
	List kList
	More kMore
}

// newList is the list of rules (their indexes, in precedence order) whose
// first one's line is head.
func newList(head kLine, rules []uint32) kHList {
	v := kHList{List: kList{Head: head, Rule: rules[0]}}
	v.List.Head.N = uint8(len(rules))
	copy(v.More.Rule[:], rules[1:])
	return v
}

// rules is the list's rule indexes, in precedence order (nil when its
// length is out of range: not a list the controller wrote).
func (v *kHList) rules() []uint32 {
	n := int(v.List.Head.N)
	if n == 0 || n > listMax {
		return nil
	}
	return append([]uint32{v.List.Rule}, v.More.Rule[:n-1]...)
}

const (
	ruleGTP = 0x01
	ruleUL  = 0x02
	ruleUE4 = 0x04
	ruleUE6 = 0x08
	// ruleURRCountdown << i: the rule's i-th URR has a volume threshold
	// or quota (atomic down-counters); without it the fast path only
	// counts the packet in the URR's per-CPU counters.
	ruleURRCountdown = 0x10
)

// Owner names what a kernel entry belongs to: the session's SEID and the
// rule's PFCP ID. The daemon reads it back after a restart to adopt the
// entries (and their counters); the fast path ignores it.
type Owner struct {
	SEID uint64
	ID   uint32
	// Retired (rules only): the generation in which the rule left its
	// lists; its counters wait for a grace period to be folded into its
	// URRs (drain.go). 0: a live rule.
	Retired uint32
}

// kLine is what a packet's path reads of a rule; the first rule of a list
// has a copy of it in the list. 52 octets: a slot's key, a list's head line
// and its first rule's index are one cache line.
type kLine struct {
	// QER: the rule's QERs that gate or police; one that only gives a QFI
	// is not read by the fast path (Mark has its QFI).
	QER   [ruleQERs]uint32
	SDF   uint32
	UE4   [4]byte
	UE6   [8]byte
	Flags uint8
	QFI   uint8
	// N: in a list's head, the list's length; 0 in upf_rules.
	N uint8
	// Mark: the QFI downlink packets are marked with, the first of the
	// rule's QERs' that has one (0: QFI).
	Mark uint8
	// kFwd is a copy of the FAR's: a changed FAR gets a new slot, and so
	// do the rules that use it.
	kFwd
}

// kRule is a rule: its line, its FAR (read by the fast path only for NOCP
// and DUPL), its URRs (read by the fast path only when one counts down a
// threshold or quota) and its owner.
type kRule struct {
	kLine
	FAR uint32
	URR [ruleURRs]uint32
	Owner
}

const (
	sdfProto  = 0x001
	sdfRemote = 0x002
	sdfLocal  = 0x004
	sdfRPort  = 0x008
	sdfLPort  = 0x010
	sdfToS    = 0x020
	sdfSPI    = 0x040
	sdfFL     = 0x080
	sdfV6     = 0x100
)

type kSDF struct {
	Flags      uint16
	Proto      uint8
	ToS        uint8
	ToSMask    uint8
	_          [3]uint8
	RPortLo    uint16
	RPortHi    uint16
	LPortLo    uint16
	LPortHi    uint16
	SPI        [4]byte
	FlowLabel  uint32
	Remote     [16]byte
	RemoteMask [16]byte
	Local      [16]byte
	LocalMask  [16]byte
	Owner
}

const (
	farForw = 0x01
	farDrop = 0x02
	farBuff = 0x04
	farNOCP = 0x08
	farToS  = 0x10
	farDupl = 0x20

	ohcNone = 0
	ohcGTP4 = 4
	ohcGTP6 = 6
)

// kFwd is what a FAR does with a packet.
type kFwd struct {
	Action uint8
	Port   uint8
	OHC    uint8
	ToS    uint8
	TEID   [4]byte
	Peer   [16]byte
}

type kFAR struct {
	kFwd
	Notified uint32
	_        uint32
	// Dup is where action dupl sends a copy.
	Dup kFwd
	Owner
}

const (
	qerULClosed = 0x01
	qerDLClosed = 0x02
	qerMBRUL    = 0x04
	qerMBRDL    = 0x08
)

type kQER struct {
	Gate uint8
	QFI  uint8
	_    [6]uint8
	Cost [2]uint64
	Tau  [2]uint64
	TAT  [2]uint64
	Owner
}

const (
	urrThTotal = 0x01
	urrThUL    = 0x02
	urrThDL    = 0x04
	urrQTotal  = 0x08
	urrQUL     = 0x10
	urrQDL     = 0x20
)

type kURR struct {
	Flags uint32
	_     uint32
	Th    [3]int64
	Q     [3]int64
	Owner
}

// kBlock is a rule's counter block (struct upf_count): its direction's
// octets and packets on one CPU.
type kBlock struct {
	Bytes uint64
	Pkts  uint64
}

// kCount is what the daemon adds blocks up to: by direction, uplink first.
type kCount struct {
	Bytes [2]uint64
	Pkts  [2]uint64
}

type kNeighKey struct {
	Port uint32
	Addr [16]byte
}

type kNeigh struct {
	MAC [6]byte
	_   uint16
}

type kCfg struct {
	NoTEIDGapNs uint64
	// ChosenBase and ChosenN: the chosen TEID range (host order), whose
	// TEIDs' lists are in upf_teid_slots.
	ChosenBase, ChosenN uint32
}

// kTEIDSlot is a chosen TEID's list in upf_teid_slots (one cache line);
// TEID (network order) 0: a free slot.
type kTEIDSlot struct {
	TEID uint32
	List kList
	_    uint32
}

// UE pools (upf_pools, upf_ue_slots, upf_ue_lists; pools.go).
const (
	poolsMax  = 8 // indexed pools per family
	slotsOfV4 = 0
	slotsOfV6 = 1
)

type kPool struct {
	Base  uint64
	Size  uint32
	First uint32
}

type kPools struct {
	N4, N6 uint32
	V4     [poolsMax]kPool
	V6     [poolsMax]kPool
}

// kUEList is a pooled UE address's list (upf_ue_lists, one cache line),
// with the address as the packet has it (listKey.K). A slot of upf_ue_slots is a uint32: the
// index of its list, 0 for none.
type kUEList struct {
	UE   uint64
	List kList
}
