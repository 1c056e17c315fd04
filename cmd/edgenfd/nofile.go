package main

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// raiseNofile lifts the soft limit on open files as far as it goes: every
// cube holds about five descriptors (its program and maps), so 10,000 cubes
// need 50,000, far above the usual soft limit of 1024. With
// CAP_SYS_RESOURCE the hard limit is raised to the kernel's ceiling
// (fs.nr_open) as well; without it, the soft limit goes up to the hard one
// (systemd's LimitNOFILE in the unit sets both). It returns the limit in
// force; failing to raise is not fatal, cubes past the limit fail to load
// with "too many open files".
func raiseNofile() (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if ceil := nrOpen(); ceil > lim.Max {
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: ceil, Max: ceil}) == nil {
			return ceil, nil
		}
	}
	if lim.Cur >= lim.Max {
		return lim.Cur, nil
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: lim.Max, Max: lim.Max}); err != nil {
		return lim.Cur, err
	}
	return lim.Max, nil
}

// nrOpen is the most descriptors a process may be allowed (0: unknown).
func nrOpen() uint64 {
	b, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}
