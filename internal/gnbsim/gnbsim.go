// Package gnbsim simulates a gNB's user plane for tests and the demo: each
// UE is a network namespace with a TUN device whose packets the gNB puts
// into GTP-U (TS 29.281, with the PDU Session Container of TS 38.415)
// towards the UPF, over a UDP socket in the gNB's own namespace, and the
// UPF's downlink tunnels come back out of that socket into the UE's TUN.
// The UEs' traffic is real (ping, UDP and TCP sockets); the gNB records
// what the UPF sent it: TEIDs, QFIs, End Markers, Error Indications.
package gnbsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Port is GTP-U's UDP port.
const Port = 2152

// GNB is a simulated gNB.
type GNB struct {
	conn *net.UDPConn
	upf  netip.AddrPort

	mu      sync.Mutex
	tunnels map[uint32]*tunnel // by the gNB's (downlink) TEID

	EndMarkers       atomic.Uint64
	ErrorIndications atomic.Uint64
	Unknown          atomic.Uint64 // G-PDUs to a TEID no UE has
	done             chan struct{}
	wg               sync.WaitGroup
}

// New starts a gNB in host, on its address addr, sending to the UPF's N3
// address.
func New(host *netlab.Host, addr, upf netip.Addr) (*GNB, error) {
	var conn *net.UDPConn
	err := host.Do(func() error {
		var err error
		conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, Port)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("gnbsim: %w", err)
	}
	_ = conn.SetReadBuffer(8 << 20)
	_ = conn.SetWriteBuffer(8 << 20)
	g := &GNB{conn: conn, upf: netip.AddrPortFrom(upf, Port), tunnels: map[uint32]*tunnel{}, done: make(chan struct{})}
	g.wg.Add(1)
	go g.downlink()
	return g, nil
}

// Close stops the gNB and its UEs' tunnels (the UEs' namespaces are the
// lab's).
func (g *GNB) Close() {
	select {
	case <-g.done:
		return
	default:
	}
	close(g.done)
	g.conn.Close()
	g.mu.Lock()
	for _, t := range g.tunnels {
		t.ue.tun.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// UE is a UE attached to the gNB.
type UE struct {
	Host *netlab.Host
	// ULTEID is the UPF's tunnel (its F-TEID), DLTEID the gNB's.
	ULTEID, DLTEID uint32
	QFI            uint8
	tun            *os.File
	g              *GNB

	ULPackets, DLPackets atomic.Uint64
	// LastQFI is the QFI of the last downlink packet (0: no container).
	LastQFI atomic.Uint32
	// Tunnel can change (a handover); read it with ul().
	mu sync.Mutex
}

// UEConfig describes a UE to attach.
type UEConfig struct {
	// Addresses of the UE (CIDR; the TUN device is point-to-point).
	Addresses []string
	ULTEID    uint32
	DLTEID    uint32
	QFI       uint8
	// MTU of the UE's TUN device (default 1400: room for the tunnel).
	MTU int
}

// AddUE puts a TUN device "tun0" into host, with the UE's addresses and
// default routes through it, and tunnels its packets.
func (g *GNB) AddUE(host *netlab.Host, cfg UEConfig) (*UE, error) {
	if cfg.MTU == 0 {
		cfg.MTU = 1400
	}
	var tun *os.File
	err := host.Do(func() error {
		var err error
		tun, err = openTUN("tun0")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("gnbsim: TUN in %s: %w", host.Name, err)
	}
	nl := host.Netlink()
	lk, err := nl.LinkByName("tun0")
	if err == nil {
		err = nl.LinkSetMTU(lk, cfg.MTU)
	}
	if err == nil {
		// A deep queue: the gNB is a userspace process on a shared
		// machine, and a UE's packets must not be lost while it waits
		// for a CPU (the default 500 packets are 0.25 s at 2000/s).
		err = nl.LinkSetTxQLen(lk, 16384)
	}
	if err == nil {
		err = host.AddAddr("tun0", cfg.Addresses...)
	}
	if err == nil {
		err = nl.LinkSetUp(lk)
	}
	for _, a := range cfg.Addresses {
		if err != nil {
			break
		}
		pf := netip.MustParsePrefix(a)
		dst := &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}
		if pf.Addr().Is6() {
			dst = &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
		}
		err = nl.RouteAdd(&netlink.Route{LinkIndex: lk.Attrs().Index, Dst: dst, Scope: netlink.SCOPE_LINK})
	}
	if err != nil {
		tun.Close()
		return nil, fmt.Errorf("gnbsim: set up tun0 in %s: %w", host.Name, err)
	}
	u := &UE{Host: host, ULTEID: cfg.ULTEID, DLTEID: cfg.DLTEID, QFI: cfg.QFI, tun: tun, g: g}
	g.AddTunnel(u, cfg.DLTEID)
	g.wg.Add(1)
	go u.uplink()
	return u, nil
}

// tunnel is a downlink tunnel of a UE (a UE has one per QoS flow the SMF
// gives its own TEID).
type tunnel struct {
	ue      *UE
	packets atomic.Uint64
	bytes   atomic.Uint64 // of the inner packets
	qfi     atomic.Uint32
}

// AddTunnel makes the gNB deliver the downlink tunnel teid to u too.
func (g *GNB) AddTunnel(u *UE, teid uint32) {
	g.mu.Lock()
	g.tunnels[teid] = &tunnel{ue: u}
	g.mu.Unlock()
}

// Tunnel reports what came down tunnel teid: packets, octets of the inner
// packets, and the QFI of the last one.
func (g *GNB) Tunnel(teid uint32) (packets, bytes uint64, qfi uint8) {
	g.mu.Lock()
	t := g.tunnels[teid]
	g.mu.Unlock()
	if t == nil {
		return 0, 0, 0
	}
	return t.packets.Load(), t.bytes.Load(), uint8(t.qfi.Load())
}

// SetULTEID changes the UE's uplink tunnel.
func (u *UE) SetULTEID(teid uint32) {
	u.mu.Lock()
	u.ULTEID = teid
	u.mu.Unlock()
}

func (u *UE) ul() (uint32, uint8) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ULTEID, u.QFI
}

// uplink tunnels the packets the UE sends.
func (u *UE) uplink() {
	defer u.g.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, err := u.tun.Read(buf[16:])
		if err != nil {
			return
		}
		teid, qfi := u.ul()
		// The G-PDU's header goes right before the packet: 8 octets, or
		// 16 with a PDU Session Container (UL PDU SESSION INFORMATION,
		// type 1) carrying the QFI.
		hl := 8
		if qfi != 0 {
			hl = 16
			copy(buf[16-hl:], []byte{0x34, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x85, 1, 0x10, qfi & 0x3f, 0})
		} else {
			copy(buf[16-hl:], []byte{0x30, 0xff, 0, 0, 0, 0, 0, 0})
		}
		h := buf[16-hl : 16]
		binary.BigEndian.PutUint32(h[4:], teid)
		binary.BigEndian.PutUint16(h[2:], uint16(hl-8+n))
		pkt := buf[16-hl : 16+n]
		if _, err := u.g.conn.WriteToUDPAddrPort(pkt, u.g.upf); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		u.ULPackets.Add(1)
	}
}

// downlink delivers the UPF's G-PDUs to the UEs.
func (g *GNB) downlink() {
	defer g.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, _, err := g.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		b := buf[:n]
		if len(b) < 8 || b[0]>>5 != 1 {
			continue
		}
		switch b[1] {
		case 254:
			g.EndMarkers.Add(1)
			continue
		case 26:
			g.ErrorIndications.Add(1)
			continue
		case 255:
		default:
			continue
		}
		teid := binary.BigEndian.Uint32(b[4:])
		off, qfi, ok := payload(b)
		if !ok {
			continue
		}
		g.mu.Lock()
		t := g.tunnels[teid]
		g.mu.Unlock()
		if t == nil {
			g.Unknown.Add(1)
			continue
		}
		u := t.ue
		t.packets.Add(1)
		t.bytes.Add(uint64(len(b) - off))
		t.qfi.Store(uint32(qfi))
		u.LastQFI.Store(uint32(qfi))
		u.DLPackets.Add(1)
		_, _ = u.tun.Write(b[off:])
	}
}

// payload finds a G-PDU's inner packet and its PDU Session Container QFI.
func payload(b []byte) (int, uint8, bool) {
	off := 8
	var qfi uint8
	if b[0]&0x07 != 0 {
		if len(b) < 12 {
			return 0, 0, false
		}
		next := b[11]
		off = 12
		for next != 0 {
			if off >= len(b) || b[off] == 0 || off+int(b[off])*4 > len(b) {
				return 0, 0, false
			}
			n := int(b[off]) * 4
			if next == 0x85 {
				qfi = b[off+2] & 0x3f
			}
			next = b[off+n-1]
			off += n
		}
	}
	return off, qfi, off <= len(b)
}

// openTUN opens a TUN device (no packet information header) in the
// calling thread's namespace.
func openTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var req struct {
		name  [unix.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(req.name[:], name)
	req.flags = unix.IFF_TUN | unix.IFF_NO_PI
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETIFF, uintptr(unsafe.Pointer(&req))); errno != 0 {
		unix.Close(fd)
		return nil, errno
	}
	// Non-blocking: the runtime's poller serves it, and Close ends a Read.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun"), nil
}
