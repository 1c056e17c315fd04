package backend

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// PSA's Checksum<W>(PSA_HashAlgorithm_t) with CRC16 or CRC32: a CRC over
// the data of every update() since the packet's start or the last
// clear(), each update's data packed as Hash packs it (whole bytes,
// leading zero bits; BMv2's input). The CRC register lives in the
// per-packet state, kept so that its zero is the algorithm's start: CRC32
// stores its register XOR 0xffffffff, which is then the CRC itself.

// psaChecksumAlgo is the instance's algorithm, crc16 or crc32; "" after
// reporting one edgenf does not take.
func (g *gen) psaChecksumAlgo(in *sema.Instance) string {
	algs := []string{"IDENTITY", "CRC32", "CRC32_CUSTOM", "CRC16", "CRC16_CUSTOM", "ONES_COMPLEMENT16", "TARGET_DEFAULT"} // PSA_HashAlgorithm_t
	name := "?"
	if len(in.Args) == 1 && in.Args[0].IsInt64() && in.Args[0].Int64() < int64(len(algs)) {
		name = algs[in.Args[0].Int64()]
	}
	switch name {
	case "CRC16":
		g.needCRC16 = true
		return "crc16"
	case "CRC32", "TARGET_DEFAULT":
		g.needCRC32 = true
		return "crc32"
	}
	g.unsupported(in.Decl.Pos, fmt.Sprintf("Checksum %s with PSA_HashAlgorithm_t.%s (edgenf's Checksum takes CRC16, CRC32 and TARGET_DEFAULT, which is CRC32; for ONES_COMPLEMENT16 use InternetChecksum)", in.Name, name))
	return ""
}

// psaChecksumStmt generates Checksum.clear() and Checksum.update(data).
func (g *gen) psaChecksumStmt(call *syntax.Call, in *sema.Instance, method string) {
	alg := g.psaChecksumAlgo(in)
	if alg == "" {
		return
	}
	st := g.psaInstState("crc_", in)
	if method == "clear" {
		g.line("%s = 0;", st)
		return
	}
	data := call.Args[0].Value
	if g.listHasVarbit(data) {
		g.unsupported(data.NodePos(), "a varbit field in Checksum.update")
		return
	}
	g.line("{")
	g.indent++
	nb := (g.packPadded(data) + 7) / 8
	if alg == "crc16" {
		g.line("%s = p4_crc16_upd((__u16)%s, s->cbuf, %d);", st, st, nb)
	} else {
		g.line("%s = p4_crc32_upd((__u32)%s ^ 0xffffffff, s->cbuf, %d) ^ 0xffffffff;", st, st, nb)
	}
	g.indent--
	g.line("}")
}

// psaChecksumGet is the value of Checksum.get(): the CRC so far, cut to W.
func (g *gen) psaChecksumGet(call *syntax.Call, in *sema.Instance) string {
	w := width(g.typeOf(call))
	if w <= 0 || w > 64 || isWide(g.typeOf(call)) {
		g.unsupported(call.Pos, "Checksum of this type (bit<N>, N <= 64)")
		return "0"
	}
	if g.psaChecksumAlgo(in) == "" {
		return "0"
	}
	return fmt.Sprintf("(%s & %s)", g.psaInstState("crc_", in), mask(w))
}
