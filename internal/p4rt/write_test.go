package p4rt

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"google.golang.org/grpc/codes"
	gstatus "google.golang.org/grpc/status"
)

// TestEngineErrCodes: a write that finds its table full is
// RESOURCE_EXHAUSTED, whether the engine's bound or the kernel says so
// (errors.Is, through the wrapping on the way); other invalid writes stay
// INVALID_ARGUMENT.
func TestEngineErrCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want codes.Code
	}{
		{cube.Full("tables.entries", "1025 entries, at most 1024"), codes.ResourceExhausted},
		{fmt.Errorf("entry x: %w", fmt.Errorf("write: %w", syscall.E2BIG)), codes.ResourceExhausted},
		{cube.Errorf("tables.entries", "bad key"), codes.InvalidArgument},
		{cube.NotFound("cube", "no cube x"), codes.NotFound},
	} {
		if got := gstatus.Code(engineErr(c.err)); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}
