package datapath

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Some helpers grew new modes and flags after they appeared: the helper
// alone then understates what an object needs. bpf_skb_adjust_room came in
// 4.13 with only BPF_ADJ_ROOM_NET; the mode that opens room after the MAC
// header (BPF_ADJ_ROOM_MAC) and the encapsulation flags (an skb marked as a
// tunnel, segmented with the outer header repeated) came in 5.2, and a 4.x
// kernel refuses them at run time, not at load. The arguments are read off
// the instructions that set the helper's argument registers before the call.

// adjustRoomMAC is the requirement of bpf_skb_adjust_room called with
// BPF_ADJ_ROOM_MAC or with encapsulation flags.
func adjustRoomMAC() Requirement {
	return Requirement{Kind: "helper argument", Name: "bpf_skb_adjust_room(BPF_ADJ_ROOM_MAC, encapsulation flags)", Since: Version{5, 2},
		probe: func() error { return probeAdjustRoom(8, bpfAdjRoomMAC, 0) }}
}

// The flags of bpf_skb_adjust_room that came with the MAC mode in 5.2
// (include/uapi/linux/bpf.h).
const (
	adjRoomFlags52 = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 0xff<<56 // FIXED_GSO, ENCAP_L3_IPV4/6, ENCAP_L4_GRE/UDP, ENCAP_L2(len)
	adjRoomDecap63 = 1<<7 | 1<<8                                 // DECAP_L3_IPV4/6: the inner packet's family after a shrink, 6.3
	bpfAdjRoomMAC  = 1
)

// argRequirements returns what the helper call at ins[i] needs beyond the
// helper itself; unknown names flags (helper and bits) this file has no
// version for.
func argRequirements(ins asm.Instructions, i int) (out []Requirement, unknown []string) {
	if asm.BuiltinFunc(ins[i].Constant) != asm.FnSkbAdjustRoom {
		return nil, nil
	}
	mode, modeKnown := constArg(ins, i, asm.R3)
	flags, flagsKnown := constArg(ins, i, asm.R4)
	if !modeKnown || mode == bpfAdjRoomMAC || !flagsKnown || uint64(flags)&adjRoomFlags52 != 0 {
		// A value computed at run time may be either: the newer need.
		out = append(out, adjustRoomMAC())
	}
	if flagsKnown && uint64(flags)&adjRoomDecap63 != 0 {
		out = append(out, Requirement{Kind: "helper argument", Name: "bpf_skb_adjust_room(BPF_F_ADJ_ROOM_DECAP_L3_*)", Since: Version{6, 3},
			probe: func() error { return probeAdjustRoom(-20, bpfAdjRoomMAC, 1<<7) }})
	}
	// Other flags (NO_CSUM_RESET, ENCAP_L2_ETH) need their own version and
	// probe here before an object may use them.
	if rest := uint64(flags) &^ (adjRoomFlags52 | adjRoomDecap63); flagsKnown && rest != 0 {
		unknown = append(unknown, fmt.Sprintf("bpf_skb_adjust_room(flags %#x)", rest))
	}
	return out, unknown
}

// constArg is the constant the instructions before ins[i] leave in reg, if
// the last write to it is a move of an immediate (clang sets helper
// arguments right before the call). Another write, a call in between (it
// clobbers R1-R5) or the program's start (R2-R5 are undefined) give false.
func constArg(ins asm.Instructions, i int, reg asm.Register) (int64, bool) {
	for j := i - 1; j >= 0; j-- {
		in := ins[j]
		if in.IsFunctionCall() || in.IsBuiltinCall() || in.IsKfuncCall() {
			return 0, false
		}
		if in.Dst != reg {
			continue
		}
		switch c := in.OpCode.Class(); {
		case c.IsALU():
			if in.OpCode.ALUOp() == asm.Mov && in.OpCode.Source() == asm.ImmSource {
				return in.Constant, true
			}
			return 0, false
		case c == asm.LdClass || c == asm.LdXClass:
			if in.IsLoadFromMap() || !in.OpCode.IsDWordLoad() {
				return 0, false
			}
			return in.Constant, true
		}
	}
	return 0, false
}

// probeAdjustRoom runs bpf_skb_adjust_room(skb, diff, mode, flags) on an
// IPv4 frame: a kernel without the mode or a flag refuses at run time
// (-ENOTSUPP, -EINVAL), the verifier does not look at them.
func probeAdjustRoom(diff int32, mode int32, flags int32) error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "GPL", Instructions: asm.Instructions{
		asm.Mov.Imm(asm.R2, diff),
		asm.Mov.Imm(asm.R3, mode),
		asm.Mov.Imm(asm.R4, flags),
		asm.FnSkbAdjustRoom.Call(),
		asm.Return(),
	}})
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) {
			return err
		}
		return fmt.Errorf("probe bpf_skb_adjust_room: %w", err)
	}
	defer prog.Close()
	frame := make([]byte, 64)
	frame[12], frame[13] = 0x08, 0x00                                           // IPv4
	frame[14], frame[16], frame[17], frame[22], frame[23] = 0x45, 0, 50, 64, 17 // ihl 5, total 50, ttl, udp
	ret, err := prog.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		return fmt.Errorf("probe bpf_skb_adjust_room: %w", err)
	}
	if ret != 0 {
		return fmt.Errorf("bpf_skb_adjust_room(%d, mode %d, flags %#x): %w (returned %d)", diff, mode, flags, ebpf.ErrNotSupported, int32(ret))
	}
	return nil
}
