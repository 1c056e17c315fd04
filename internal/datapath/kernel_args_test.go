package datapath

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

func adjustRoomCall(mode, flags asm.Instruction) asm.Instructions {
	return asm.Instructions{asm.Mov.Imm(asm.R2, 8), mode, flags, asm.FnSkbAdjustRoom.Call(), asm.Return()}
}

// bpf_skb_adjust_room's mode and flags decide the kernel it needs: NET mode
// without flags is 4.13 (the helper alone), the MAC mode or any
// encapsulation flag 5.2, a decapsulation flag 6.3; a value computed at run
// time counts as the MAC mode, a flag with no known version is refused.
func TestAdjustRoomArguments(t *testing.T) {
	net, mac := asm.Mov.Imm(asm.R3, 0), asm.Mov.Imm(asm.R3, bpfAdjRoomMAC)
	for _, c := range []struct {
		name  string
		ins   asm.Instructions
		want  string
		unkwn string
	}{
		{"net, no flags", adjustRoomCall(net, asm.Mov.Imm(asm.R4, 0)), "", ""},
		{"mac", adjustRoomCall(mac, asm.Mov.Imm(asm.R4, 0)), "5.2", ""},
		{"net, encap l3 ipv6", adjustRoomCall(net, asm.Mov.Imm(asm.R4, 1<<2)), "5.2", ""},
		{"encap l2 len (64-bit constant)", adjustRoomCall(net, asm.LoadImm(asm.R4, 14<<56, asm.DWord)), "5.2", ""},
		{"mode from a register", adjustRoomCall(asm.Mov.Reg(asm.R3, asm.R7), asm.Mov.Imm(asm.R4, 0)), "5.2", ""},
		{"decap", adjustRoomCall(mac, asm.Mov.Imm(asm.R4, 1<<8)), "5.2 6.3", ""},
		{"no csum reset", adjustRoomCall(mac, asm.Mov.Imm(asm.R4, 1<<5)), "5.2", "0x20"},
	} {
		reqs, unknown := argRequirements(c.ins, 3)
		var got []string
		for _, r := range reqs {
			got = append(got, r.Since.String())
		}
		if strings.Join(got, " ") != c.want || (c.unkwn == "") != (len(unknown) == 0) ||
			(c.unkwn != "" && !strings.Contains(unknown[0], c.unkwn)) {
			t.Errorf("%s: requirements %v, unknown %v; want %q, unknown %q", c.name, reqs, unknown, c.want, c.unkwn)
		}
	}
	// A call between the move and the helper clobbers R3.
	ins := asm.Instructions{asm.Mov.Imm(asm.R3, 0), asm.FnKtimeGetNs.Call(), asm.Mov.Imm(asm.R4, 0), asm.FnSkbAdjustRoom.Call()}
	if reqs, _ := argRequirements(ins, 3); len(reqs) != 1 {
		t.Errorf("mode clobbered by a call: %v", reqs)
	}
}

// The probe tells a refused argument from an accepted one (this kernel has
// every mode; a flag no kernel knows stands in for a missing one).
func TestAdjustRoomProbe(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (probes load programs)")
	}
	if err := probeAdjustRoom(8, bpfAdjRoomMAC, 0); err != nil {
		t.Fatalf("MAC mode: %v", err)
	}
	if err := probeAdjustRoom(-20, bpfAdjRoomMAC, 1<<7); err != nil {
		t.Fatalf("decap: %v", err)
	}
	if err := probeAdjustRoom(8, bpfAdjRoomMAC, 1<<30); !errors.Is(err, ebpf.ErrNotSupported) {
		t.Fatalf("unknown flag: %v, want ErrNotSupported", err)
	}
}
