package capture

import (
	"encoding/binary"

	"golang.org/x/net/bpf"
)

// Steps runs a checked filter program (Check) on frame as the capture
// NF's in-kernel interpreter does, one instruction per bpf_loop step, and
// says how many instructions it ran and whether it took the frame: what a
// filter costs for that frame (the cost estimator prices it per step).
func Steps(prog []bpf.RawInstruction, frame []byte) (steps int, match bool) {
	var a, x uint32
	var m [16]uint32
	load := func(off uint32, size int) (uint32, bool) {
		if int64(off)+int64(size) > int64(len(frame)) {
			return 0, false
		}
		switch size {
		case 1:
			return uint32(frame[off]), true
		case 2:
			return uint32(binary.BigEndian.Uint16(frame[off:])), true
		}
		return binary.BigEndian.Uint32(frame[off:]), true
	}
	size := map[uint16]int{0x00: 4, 0x08: 2, 0x10: 1} // BPF_W, BPF_H, BPF_B
	for pc := 0; pc < len(prog) && steps < MaxProgram; {
		in := prog[pc]
		steps++
		pc++
		op, k := in.Op, in.K
		switch op & 0x07 {
		case 0x00, 0x01: // ld, ldx
			var v uint32
			ok := true
			switch op & 0xe0 {
			case 0x00: // imm
				v = k
			case 0x80: // len
				v = uint32(len(frame))
			case 0x60: // mem
				v = m[k&15]
			case 0x20: // abs
				v, ok = load(k, size[op&0x18])
			case 0x40: // ind
				v, ok = load(x+k, size[op&0x18])
			case 0xa0: // msh: 4 * (frame[k] & 0xf)
				v, ok = load(k, 1)
				v = (v & 0xf) << 2
			}
			if !ok {
				return steps, false
			}
			if op&0x07 == 0x00 {
				a = v
			} else {
				x = v
			}
		case 0x02: // st
			m[k&15] = a
		case 0x03: // stx
			m[k&15] = x
		case 0x04: // alu
			src := k
			if op&0x08 != 0 {
				src = x
			}
			switch op & 0xf0 {
			case 0x00:
				a += src
			case 0x10:
				a -= src
			case 0x20:
				a *= src
			case 0x30:
				if src == 0 {
					return steps, false
				}
				a /= src
			case 0x40:
				a |= src
			case 0x50:
				a &= src
			case 0x60:
				a <<= src & 31
			case 0x70:
				a >>= src & 31
			case 0x80:
				a = -a
			case 0x90:
				if src == 0 {
					return steps, false
				}
				a %= src
			case 0xa0:
				a ^= src
			}
		case 0x05: // jmp
			src := k
			if op&0x08 != 0 {
				src = x
			}
			var taken bool
			switch op & 0xf0 {
			case 0x00: // ja
				pc += int(k)
				continue
			case 0x10:
				taken = a == src
			case 0x20:
				taken = a > src
			case 0x30:
				taken = a >= src
			case 0x40:
				taken = a&src != 0
			}
			if taken {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case 0x06: // ret
			if op&0x18 == 0x10 { // ret a
				return steps, a != 0
			}
			return steps, k != 0
		case 0x07: // misc
			if op&0xf8 == 0x00 {
				x = a
			} else {
				a = x
			}
		}
	}
	return steps, false
}
