package stf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
	"golang.org/x/sys/unix"
)

// liveWait is how long a live run waits for a packet to come out when the
// cube's counters do not say what became of it (verdicts): a frame the
// cube dropped is known at once, one it sent once it came out.
const liveWait = 300 * time.Millisecond

// verdicts counts what a cube did with the frames it got: sent out of a
// port (copies included), dropped, punted; from its per-port counters.
type verdicts struct{ sent, dropped, punted uint64 }

func (l *live) verdicts() (verdicts, error) {
	st, err := l.cube.Stats()
	var v verdicts
	for _, s := range st {
		v.sent += s.TxPackets
		v.dropped += s.DropPackets
		v.punted += s.PuntPackets
	}
	return v, err
}

// since is what the cube did since before.
func (v verdicts) since(before verdicts) verdicts {
	return verdicts{v.sent - before.sent, v.dropped - before.dropped, v.punted - before.punted}
}

// any says the cube decided something.
func (v verdicts) any() bool { return v.sent+v.dropped+v.punted > 0 }

var liveSeq atomic.Uint32

// LoadLive runs a compiled program the way a deployment does: as a cube on
// a private datapath, each of ports peered with a veth whose far end is in a
// private namespace. Input frames are written onto those far ends and output
// frames read from them, through the kernel's real XDP/TC paths. Close
// removes the namespace, links and pins.
func LoadLive(res *p4.Result, hook string, ports []int) (_ *Runner, err error) {
	obj := res.Object
	if hook == "tc" {
		obj = res.ObjectTC
	}
	l := &live{}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if l.lab, err = netlab.New(netlab.UniquePrefix()); err != nil {
		return nil, err
	}
	host, err := l.lab.Host("w")
	if err != nil {
		return nil, err
	}
	if err := host.Sysctl("net.ipv6.conf.default.disable_ipv6", "1"); err != nil {
		return nil, err
	}
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfstf-%d-%d", os.Getpid(), liveSeq.Add(1)))
	if l.dp, err = datapath.Open(root); err != nil {
		return nil, err
	}
	spec, err := datapath.LoadSpec(obj)
	if err != nil {
		return nil, err
	}
	h := datapath.Hook(hook)
	if l.cube, err = l.dp.LoadCube("p4", h, 0, spec, nil); err != nil {
		return nil, res.ExplainLoadError(err)
	}
	l.socks = map[int]int{}
	for _, p := range ports {
		if err := l.addPort(host, h, p); err != nil {
			return nil, fmt.Errorf("port %d: %w", p, err)
		}
	}
	r := &Runner{Hook: hook, send: l.send, closer: l.close}
	r.repl = newReplState() // replicate_live.go: every copy is an output
	r.repl.live = l
	if r.RT, err = tableruntime.New(res.Info, l.cube.Maps()); err != nil {
		return nil, err
	}
	return r, nil
}

type live struct {
	lab   *netlab.Lab
	dp    *datapath.Datapath
	cube  *datapath.Program
	socks map[int]int // port → packet socket on the far end, in the namespace
}

func (l *live) addPort(host *netlab.Host, hook datapath.Hook, p int) error {
	far := fmt.Sprintf("e%d", p)
	rootName, err := l.lab.Veth(host, far, fmt.Sprintf("r%d", p))
	if err != nil {
		return err
	}
	// No IPv6 on either end: its multicast reports would read as outputs.
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+rootName+"/disable_ipv6", []byte("1"), 0o644); err != nil {
		return err
	}
	if err := host.Sysctl("net/ipv6/conf/"+far+"/disable_ipv6", "1"); err != nil {
		return err
	}
	ifi, err := net.InterfaceByName(rootName)
	if err != nil {
		return err
	}
	if err := l.cube.SetHop(uint32(p), datapath.Hop{Kind: datapath.DstIface, Ifindex: uint32(ifi.Index)}); err != nil {
		return err
	}
	if hook == datapath.XDP {
		if err := l.dp.EnsureRedirectTarget(ifi.Index); err != nil {
			return err
		}
	}
	if _, err := l.dp.AttachStub(rootName, ifi.Index, hook, datapath.Ingress, datapath.Hop{Kind: datapath.DstCube, Slot: 0, Port: uint32(p)}, l.cube); err != nil {
		return err
	}
	return host.Do(func() error {
		far, err := net.InterfaceByName(far)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		// Our own input frames are not outputs; VLAN tags the driver took
		// off come back in the auxiliary data.
		unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
		unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1)
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: far.Index}); err != nil {
			unix.Close(fd)
			return err
		}
		l.socks[p] = fd
		return nil
	})
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// send writes a frame onto a port's wire and returns the first frame that
// comes out of any port, a punt, or nil: dropped (as soon as the cube
// counts it), or nothing out after liveWait.
func (l *live) send(port int, pkt []byte) (*Output, error) {
	fd, ok := l.socks[port]
	if !ok {
		return nil, fmt.Errorf("port %d is not wired (live runs wire the ports the test uses)", port)
	}
	buf := make([]byte, 65536)
	for _, s := range l.socks { // stale frames
		for {
			if _, ok := recvFrame(s, buf); !ok {
				break
			}
		}
	}
	before, err := l.verdicts()
	if err != nil {
		return nil, err
	}
	if err := unix.Sendto(fd, pkt, 0, &unix.SockaddrLinklayer{Ifindex: l.ifindex(port)}); err != nil {
		return nil, fmt.Errorf("send on port %d: %w", port, err)
	}
	for end := time.Now().Add(liveWait); time.Now().Before(end); time.Sleep(time.Millisecond) {
		for p, s := range l.socks {
			if frame, ok := recvFrame(s, buf); ok {
				return &Output{Port: p, Data: frame}, nil
			}
		}
		now, err := l.verdicts()
		if err != nil {
			return nil, err
		}
		switch v := now.since(before); {
		case v.punted > 0:
			return &Output{Port: CPUPort, Data: pkt}, nil
		case v.dropped > 0 && v.sent == 0:
			return nil, nil
		}
	}
	return nil, nil
}

// recvFrame reads one frame, putting back a VLAN tag the kernel moved to
// the packet's metadata (as it is on the wire).
func recvFrame(fd int, buf []byte) ([]byte, bool) {
	oob := make([]byte, 256)
	n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
	if err != nil || n <= 0 {
		return nil, false
	}
	frame := append([]byte(nil), buf[:n]...)
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return frame, true
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA || len(m.Data) < 20 {
			continue
		}
		// struct tpacket_auxdata: status, len, snaplen u32; mac, net,
		// vlan_tci, vlan_tpid u16.
		status := binary.LittleEndian.Uint32(m.Data[0:])
		tci := binary.LittleEndian.Uint16(m.Data[16:])
		tpid := binary.LittleEndian.Uint16(m.Data[18:])
		if status&unix.TP_STATUS_VLAN_VALID == 0 || len(frame) < 12 {
			continue
		}
		if status&unix.TP_STATUS_VLAN_TPID_VALID == 0 {
			tpid = 0x8100
		}
		tag := []byte{byte(tpid >> 8), byte(tpid), byte(tci >> 8), byte(tci)}
		frame = append(frame[:12], append(tag, frame[12:]...)...)
	}
	return frame, true
}

func (l *live) ifindex(port int) int {
	sa, err := unix.Getsockname(l.socks[port])
	if ll, ok := sa.(*unix.SockaddrLinklayer); err == nil && ok {
		return ll.Ifindex
	}
	return 0
}

func (l *live) close() {
	for _, s := range l.socks {
		unix.Close(s)
	}
	if l.cube != nil {
		l.cube.Close()
	}
	var errs []error
	if l.dp != nil {
		errs = append(errs, l.dp.Destroy())
	}
	if l.lab != nil {
		errs = append(errs, l.lab.Close())
	}
	_ = errors.Join(errs...)
}
