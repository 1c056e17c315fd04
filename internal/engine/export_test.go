package engine

import "github.com/edgenf/edgenf/internal/datapath"

// RunCube feeds one frame to a running cube's program as if it arrived on
// inPort (BPF_PROG_TEST_RUN), for tests of what the kernel runs.
func (e *Engine) RunCube(name string, inPort uint32, frame []byte) (datapath.RunResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dp.Run(e.cubes[name].dc, inPort, frame)
}
