package measure

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// testRunAttr is the bpf_attr of BPF_PROG_TEST_RUN.
type testRunAttr struct {
	progFD      uint32
	retval      uint32
	dataSizeIn  uint32
	dataSizeOut uint32
	dataIn      uint64
	dataOut     uint64
	repeat      uint32
	duration    uint32
	ctxSizeIn   uint32
	ctxSizeOut  uint32
	ctxIn       uint64
	ctxOut      uint64
	flags       uint32
	cpu         uint32
	batchSize   uint32
	_           uint32
}

// xdpMD is struct xdp_md as BPF_PROG_TEST_RUN takes it: the frame from 0
// to its length, received on ingress_ifindex's first queue.
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// xdpContext is the context of a frame received on ifindex (nil for 0).
func xdpContext(frame []byte, ifindex int) *xdpMD {
	if ifindex == 0 {
		return nil
	}
	return &xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(ifindex)}
}

// testRun runs prog repeat times on frame, as received on ifindex (0: the
// loopback, as BPF_PROG_TEST_RUN does without a context), and returns the
// last verdict and the kernel's mean time per repetition in ns. The
// framework's shared stub finds an interface's hop by the ifindex the frame
// came in on; cilium/ebpf's Benchmark passes no context, and its Run, which
// does, keeps the time to itself.
func testRun(prog *ebpf.Program, frame []byte, ifindex int, repeat int) (uint32, float64, error) {
	attr := testRunAttr{progFD: uint32(prog.FD()), dataSizeIn: uint32(len(frame)),
		dataIn: uint64(uintptr(unsafe.Pointer(&frame[0]))), repeat: uint32(repeat)}
	md := xdpContext(frame, ifindex)
	if md != nil {
		attr.ctxSizeIn, attr.ctxIn = uint32(unsafe.Sizeof(*md)), uint64(uintptr(unsafe.Pointer(md)))
	}
	for {
		_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_TEST_RUN, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
		runtime.KeepAlive(frame)
		runtime.KeepAlive(md)
		runtime.KeepAlive(prog)
		switch {
		case errno == 0:
			return attr.retval, float64(attr.duration), nil
		case errors.Is(errno, unix.EINTR):
			// interrupted (a signal to the process): the kernel ran some
			// repetitions, and times a new call afresh
			continue
		case ifindex != 0 && (errors.Is(errno, unix.ENODEV) || errors.Is(errno, unix.EINVAL)):
			return 0, 0, fmt.Errorf("test run as received on ifindex %d (no such interface in this network namespace?): %w", ifindex, errno)
		default:
			return 0, 0, fmt.Errorf("test run: %w", errno)
		}
	}
}
