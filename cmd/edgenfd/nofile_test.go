package main

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The daemon starts with its soft limit on open files at the hard limit (or
// above, with CAP_SYS_RESOURCE): 10,000 cubes need ~50,000 descriptors.
func TestRaiseNofile(t *testing.T) {
	var before unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &before); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &before)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 1024, Max: before.Max}); err != nil {
		t.Fatal(err)
	}
	got, err := raiseNofile()
	if err != nil {
		t.Fatal(err)
	}
	var now unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &now); err != nil {
		t.Fatal(err)
	}
	if now.Cur != got || now.Cur < before.Max {
		t.Fatalf("soft limit %d after raising (reported %d), hard limit was %d", now.Cur, got, before.Max)
	}
}
