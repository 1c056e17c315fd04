package backend

import (
	"fmt"
	"strings"
)

// Slicing-by-8 CRCs (Intel's "slicing" tables, as zlib and Linux's
// crc32 use): eight bytes take eight independent table loads instead of a
// chain of eight dependent ones, which matters to a selector hashing every
// packet's key. The results are those of bpf/include/edgenf/p4/crc.h's
// byte-at-a-time p4_crc16 and p4_crc32 (BMv2's crc16 and crc32); the
// tables are computed here and emitted only into programs that use them.

type crcAlgo struct {
	name         string
	ctype        string
	width        int
	poly         uint32 // reflected
	init, xorout uint32
}

var slicedCRCs = []crcAlgo{
	{"crc16", "__u16", 16, 0xa001, 0, 0},
	{"crc32", "__u32", 32, 0xedb88320, 0xffffffff, 0xffffffff},
}

// crcSliceMin is the key length from which the sliced CRC is used; below
// it the byte-at-a-time one is as fast and its table smaller.
const crcSliceMin = 8

// CRCWork is how the generated code runs the CRC alg (crc16, crc32) over
// n bytes: blocks of eight by slicing, each block's loads independent of
// one another, and bytes one at a time, each load waiting for the last (all
// n below crcSliceMin, else what is left after the blocks). The cost
// estimator prices a CRC by these.
func CRCWork(alg string, n int) (blocks, bytes int) {
	if n < crcSliceMin {
		return 0, n
	}
	for _, a := range slicedCRCs {
		if a.name == alg {
			return n / 8, n % 8
		}
	}
	return 0, n
}

// slicedCRC returns the C call of the sliced CRC alg over n bytes of
// s->cbuf, "" when alg has none or n is short.
func (g *gen) slicedCRC(alg string, n int) string {
	if blocks, _ := CRCWork(alg, n); blocks == 0 {
		return ""
	}
	if g.sliceCRC == nil {
		g.sliceCRC = map[string]bool{}
	}
	g.sliceCRC[alg] = true
	return fmt.Sprintf("p4_%s_s8(s->cbuf, %d)", alg, n)
}

// crcTables are a reflected CRC's slicing tables: t[0] the byte-at-a-time
// table, t[k][i] the CRC register after byte i and k zero bytes.
func crcTables(poly uint32) [8][256]uint32 {
	var t [8][256]uint32
	for i := range 256 {
		c := uint32(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ poly
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for k := 1; k < 8; k++ {
		for i := range 256 {
			p := t[k-1][i]
			t[k][i] = p>>8 ^ t[0][p&0xff]
		}
	}
	return t
}

// crcSlices is the C of the sliced CRCs the program uses.
func (g *gen) crcSlices() string {
	var b strings.Builder
	for _, a := range slicedCRCs {
		if !g.sliceCRC[a.name] {
			continue
		}
		fn, tab := "p4_"+a.name+"_s8", "p4_"+a.name+"_s8t"
		fmt.Fprintf(&b, "/* %s by slicing-by-8 (backend/crcslice.go) */\nstatic const %s %s[8][256] = {\n", a.name, a.ctype, tab)
		t := crcTables(a.poly)
		for k := range t {
			b.WriteString("\t{")
			for i, v := range t[k] {
				if i%8 == 0 {
					b.WriteString("\n\t\t")
				}
				fmt.Fprintf(&b, "0x%0*x, ", a.width/4, v)
			}
			b.WriteString("\n\t},\n")
		}
		b.WriteString("};\n\n")
		// the first width/8 bytes of a block fold into the register
		reg := a.width / 8
		var x, terms []string
		for j := range reg {
			x = append(x, fmt.Sprintf("(__u32)b[i + %d] << %d", j, 8*j))
			terms = append(terms, fmt.Sprintf("%s[%d][(x >> %d) & 0xff]", tab, 7-j, 8*j))
		}
		for j := reg; j < 8; j++ {
			terms = append(terms, fmt.Sprintf("%s[%d][b[i + %d]]", tab, 7-j, j))
		}
		fmt.Fprintf(&b, "static __always_inline %s %s(const __u8 *b, int n)\n{\n", a.ctype, fn)
		fmt.Fprintf(&b, "\t%s c = 0x%x;\n\tint i = 0;\n\n#pragma unroll\n\tfor (; i + 8 <= n; i += 8) {\n", a.ctype, a.init)
		fmt.Fprintf(&b, "\t\t__u32 x = c ^ (%s);\n\n", strings.Join(x, " | "))
		fmt.Fprintf(&b, "\t\tc = %s;\n\t}\n", strings.Join(terms, " ^\n\t\t    "))
		fmt.Fprintf(&b, "#pragma unroll\n\tfor (; i < n; i++)\n\t\tc = %s[0][(c ^ b[i]) & 0xff] ^ (c >> 8);\n\treturn c ^ 0x%x;\n}\n\n", tab, a.xorout)
	}
	return b.String()
}
