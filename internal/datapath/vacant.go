package datapath

// The vacant program: what a direct hop holds when it enters no cube.
//
// Deleting a prog_array entry that programs tail-call with a constant
// index (enf_peers: direct.go) makes the kernel wait for an RCU grace
// period inside the syscall (prog_array_map_poke_run: the jump is
// unpatched in two steps with synchronize_rcu between them), 5 to 20 ms
// here, and a rewire did one or two of them. Replacing the entry by
// another program is patched in one step and does not wait, and it drops
// the kernel's reference to the program it held at once, as a delete
// would. So a dropped direct hop is overwritten with this program rather
// than deleted. Its id is never any slot's owner and enf_peer_ids holds 0
// for the port, so the fast path never jumps into it; were it ever
// entered, it drops the frame.

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// vacant returns the hook's vacant program, loading it once (d.peersMu
// held). A program array takes only programs of the type, expected attach
// type and frags mode of its first one: those of the hook's cubes.
func (d *Datapath) vacant(hook Hook) (*ebpf.Program, error) {
	if p := d.vacants[hook]; p != nil {
		return p, nil
	}
	spec := &ebpf.ProgramSpec{Name: "edgenf_vacant", License: "Dual BSD/GPL"}
	switch hook {
	case XDP:
		spec.Type, spec.AttachType = ebpf.XDP, ebpf.AttachXDP                      // as the cubes' SEC("xdp")
		spec.Instructions = asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()} // XDP_DROP
	case TC:
		spec.Type = ebpf.SchedCLS
		spec.Instructions = asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()} // TC_ACT_SHOT
	default:
		return nil, fmt.Errorf("vacant program: unknown hook %v", hook)
	}
	p, err := ebpf.NewProgram(spec)
	if err != nil {
		return nil, fmt.Errorf("vacant program: %w", err)
	}
	if d.vacants == nil {
		d.vacants = map[Hook]*ebpf.Program{}
	}
	d.vacants[hook] = p
	return p, nil
}

// closeVacants releases this process's handles on the vacant programs;
// entries that hold them keep them until overwritten or freed with their
// cube.
func (d *Datapath) closeVacants() {
	d.peersMu.Lock()
	defer d.peersMu.Unlock()
	for hook, p := range d.vacants {
		p.Close()
		delete(d.vacants, hook)
	}
}
