package p4path

// The cost-model terms a P4 path uses. Each is a cost in the profile's unit
// (ns) per unit of its count; the calibration fits them from generated
// micro-programs (internal/estimate/calibrate).
const (
	// Verdicts: the whole fixed cost of a P4 cube entered from an
	// interface (direct entry, per-packet state reset, the pipeline's
	// stages) ending with the verdict.
	TermSend = "p4.send" // forwarded out of a port
	TermDrop = "p4.drop" // dropped by ingress or egress
	TermPunt = "p4.punt" // sent to the CPU port (the slow path)

	TermStateByte  = "p4.state.byte" // per byte of per-packet state reset (headers, metadata)
	TermReplicates = "p4.replicates" // the program can copy packets (clone, resubmit, recirculate, multicast): its pipeline keeps the replication state
	TermPSA        = "p4.psa"        // a PSA program: its pipeline's own work beyond V1Switch's (the architecture's metadata)
	TermPSAEgress  = "p4.psa.egress" // a PSA packet through a non-empty egress pipeline: its start (headers reset, metadata set)

	TermParseHeader = "p4.parse.header"    // per header extracted
	TermParseByte   = "p4.parse.byte"      // per byte extracted
	TermLookahead   = "p4.parse.lookahead" // per lookahead: the frame's next bytes copied out (a helper call)

	TermStmt   = "p4.stmt"   // per statement executed (assignment, condition, simple call)
	TermAction = "p4.action" // per action run

	TermHash        = "p4.table.hash"          // exact-match table lookup
	TermHashKeyByte = "p4.table.hash.key_byte" // per byte of an exact key
	TermLPM         = "p4.table.lpm"           // longest-prefix-match lookup
	TermLPMLog2     = "p4.table.lpm.log2n"     // per log2(entries + 1) of an LPM table
	TermScan        = "p4.table.scan"          // ternary/range/optional table lookup
	TermScanEntry   = "p4.table.scan.entry"    // per entry of a ternary/range table scanned
	TermConst       = "p4.table.const"         // table with const entries (compiled in)
	TermConstEntry  = "p4.table.const.entry"   // per const entry compared
	TermKeyless     = "p4.table.keyless"       // table without a key (default action only)
	TermMiss        = "p4.table.miss"          // extra cost of a miss (the default action's entry)
	TermDirectCount = "p4.table.direct_counter"
	TermTableCall   = "p4.table.call" // a table applied as a global function, not inlined (backend.InlinesTables)
	// action profiles and selectors (profiles.go)
	TermProfileMember = "p4.table.profile.member" // a reference resolved to its member (the member map's lookup)
	TermProfileGroup  = "p4.table.profile.group"  // a group reference: the group map's lookup and the pick of a member

	TermRegRead   = "p4.extern.register_read"
	TermRegWrite  = "p4.extern.register_write"
	TermCounter   = "p4.extern.counter"
	TermMeter     = "p4.extern.meter" // indirect or direct, configured
	TermAtomic    = "p4.extern.atomic"
	TermTimestamp = "p4.extern.timestamp"
	TermCRC16     = "p4.extern.hash_crc16"
	TermCRC32     = "p4.extern.hash_crc32"
	TermHashByte  = "p4.extern.hash.byte"  // per byte crc16/crc32 hash one at a time
	TermHashBlock = "p4.extern.hash.block" // per block of eight bytes crc16/crc32 hash by slicing
	TermHashOther = "p4.extern.hash_other"
	TermRandom    = "p4.extern.random"
	TermDigest    = "p4.extern.digest"
	TermClone     = "p4.extern.clone" // clone, resubmit, recirculate, multicast: the replication path

	TermCsum     = "p4.checksum.csum16"      // update_checksum / verify_checksum with csum16
	TermCsumByte = "p4.checksum.csum16.byte" // per byte summed
	// *_with_payload: the payload after the parsed headers is summed too,
	// two bytes at a time through the load helper
	TermCsumPayload     = "p4.checksum.payload"      // per checksum with payload
	TermCsumPayloadWord = "p4.checksum.payload.word" // per 2 bytes of payload summed

	TermDeparseCheck  = "p4.deparse.check"       // per header the deparser names (valid or not)
	TermDeparseHeader = "p4.deparse.header"      // per header emitted
	TermDeparseField  = "p4.deparse.field"       // per field written back into a header still where it was parsed
	TermDeparseByte   = "p4.deparse.moved_byte"  // per byte of a header added or moved (written whole)
	TermHeadAdjust    = "p4.deparse.head_adjust" // the frame grows or shrinks (headers added or removed)
)

// Terms lists every P4 term with what it prices.
var Terms = []struct{ Name, Doc string }{
	{TermSend, "a P4 cube, entered from an interface, forwarding the packet: entry, state reset, stages, redirect"},
	{TermDrop, "the same, the packet dropped by ingress or egress"},
	{TermPunt, "the same, the packet sent to the CPU port (slow path)"},
	{TermStateByte, "per byte of per-packet state (headers, metadata) reset for each packet"},
	{TermReplicates, "a program that can copy packets (clone, resubmit, recirculate, multicast), on every packet: the replication state it keeps"},
	{TermPSA, "a PSA program, on every packet: its pipeline's own work beyond V1Switch's (the architecture's metadata)"},
	{TermPSAEgress, "a PSA packet through a non-empty egress pipeline: the pass started (headers reset, metadata set)"},
	{TermParseHeader, "per header extracted by the parser"},
	{TermParseByte, "per byte extracted by the parser"},
	{TermLookahead, "per lookahead: the frame's next bytes copied out by a helper call"},
	{TermStmt, "per statement executed (assignment, condition, simple call)"},
	{TermAction, "per action run"},
	{TermHash, "exact-match table lookup"},
	{TermHashKeyByte, "per key byte of an exact-match lookup"},
	{TermLPM, "longest-prefix-match table lookup"},
	{TermLPMLog2, "per log2(entries+1) of an LPM table"},
	{TermScan, "ternary/range table lookup"},
	{TermScanEntry, "per entry scanned by a ternary/range lookup"},
	{TermConst, "lookup in a table of const entries"},
	{TermConstEntry, "per const entry compared"},
	{TermKeyless, "keyless table (default action)"},
	{TermMiss, "a table miss (the default action's entry)"},
	{TermDirectCount, "direct counter of a table hit"},
	{TermTableCall, "a table applied as a global function (a program whose tables the compiler does not inline: more than 3, scanned, or beside a stateful or hashing extern): the call, its return and the state's lookup"},
	{TermProfileMember, "action profile or selector: a table hit's reference resolved to its member (member map lookup)"},
	{TermProfileGroup, "action selector: a group reference (group map lookup, a member picked by the selector's hash)"},
	{TermRegRead, "register read"},
	{TermRegWrite, "register write"},
	{TermCounter, "counter"},
	{TermMeter, "meter (configured)"},
	{TermAtomic, "@atomic block (bpf_spin_lock)"},
	{TermTimestamp, "ingress_global_timestamp (bpf_ktime_get_ns)"},
	{TermCRC16, "hash crc16"},
	{TermCRC32, "hash crc32"},
	{TermHashByte, "per byte crc16/crc32 hash one at a time (a key shorter than 8 bytes, or what is left after its blocks)"},
	{TermHashBlock, "per block of 8 bytes crc16/crc32 hash by slicing (keys of 8 bytes or more)"},
	{TermHashOther, "hash with another algorithm"},
	{TermRandom, "random"},
	{TermDigest, "digest (to the slow path)"},
	{TermClone, "clone, resubmit, recirculate or multicast (the replication path)"},
	{TermCsum, "checksum update or verification (csum16)"},
	{TermCsumByte, "per byte of a checksummed field list"},
	{TermCsumPayload, "a checksum *_with_payload: the payload's sum started"},
	{TermCsumPayloadWord, "per 2 bytes of payload summed by a *_with_payload checksum (a load helper call each)"},
	{TermDeparseCheck, "per header the deparser names, valid or not (its validity checked)"},
	{TermDeparseHeader, "per header emitted"},
	{TermDeparseField, "per field written back into a header where it was parsed"},
	{TermDeparseByte, "per byte of a header added or moved"},
	{TermHeadAdjust, "the frame grows or shrinks at its head"},
}
