package main

import (
	"fmt"
	"os"

	"github.com/cilium/ebpf/rlimit"
	"github.com/edgenf/edgenf/internal/doctor"
	"github.com/edgenf/edgenf/internal/state"
)

// runCheck prints the doctor's report for this machine and the interfaces of
// the state file's topology, changing nothing; it returns the exit status.
func runCheck(stateFile, bpffs string) int {
	opt := doctor.Options{BPFFS: bpffs}
	f, err := state.Load(stateFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "edgenfd -check: state file %s: %v\n", stateFile, err)
	} else {
		opt.Interfaces = doctor.Interfaces(f.Topology.Document())
	}
	rs := doctor.Run(opt)
	doctor.Print(os.Stdout, rs)
	if doctor.Failed(rs) || err != nil {
		return 1
	}
	return 0
}

// raiseMemlock lets a kernel before 5.11, which charges eBPF memory to
// RLIMIT_MEMLOCK, create the daemon's maps (a no-op on later kernels).
func raiseMemlock() error {
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("raising the memlock limit for eBPF maps: %w (run edgenfd as root, with LimitMEMLOCK=infinity under systemd)", err)
	}
	return nil
}
