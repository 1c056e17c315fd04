//go:build crashpoints

package engine

import (
	"os"
	"syscall"
)

// crashPoint kills the daemon with SIGKILL (no cleanup of any kind) when
// $EDGENF_CRASH_AT names this point: a test builds the daemon with
// -tags crashpoints to stop it exactly between two steps of a change.
func crashPoint(name string) {
	if os.Getenv("EDGENF_CRASH_AT") == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}
