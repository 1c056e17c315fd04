package ddos

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nf/counters"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"golang.org/x/sys/unix"
)

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// sniffer counts IPv4 frames from one source arriving on dev in h, and
// among them TCP SYNs.
type sniffer struct {
	frames, syns atomic.Int64
	fd           int
	done         chan struct{}
}

func sniff(t *testing.T, h *netlab.Host, dev string, src net.IP) *sniffer {
	t.Helper()
	s := &sniffer{done: make(chan struct{})}
	idx, err := h.IfIndex(dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Do(func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		s.fd = fd
		tv := unix.Timeval{Usec: 100_000}
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		// The socket sees the concurrent transfers too: a buffer that holds
		// all of them, so a busy machine cannot make it drop the probes.
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20)
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: idx})
	}); err != nil {
		t.Fatal(err)
	}
	want := src.To4()
	go func() {
		defer close(s.done)
		buf := make([]byte, 2048)
		for {
			n, from, err := unix.Recvfrom(s.fd, buf, 0)
			if err != nil {
				if err == unix.EAGAIN || err == unix.EINTR {
					select {
					case <-s.stopc():
						return
					default:
						continue
					}
				}
				return
			}
			if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
				continue
			}
			f := buf[:n]
			if n < 34+14 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || !net.IP(f[26:30]).Equal(want) {
				continue
			}
			s.frames.Add(1)
			if f[23] == 6 && f[14+20+13]&0x12 == 0x02 {
				s.syns.Add(1)
			}
		}
	}()
	t.Cleanup(func() { s.close() })
	return s
}

var stopMu sync.Mutex
var stops = map[*sniffer]chan struct{}{}

func (s *sniffer) stopc() chan struct{} {
	stopMu.Lock()
	defer stopMu.Unlock()
	if stops[s] == nil {
		stops[s] = make(chan struct{})
	}
	return stops[s]
}

func (s *sniffer) close() {
	c := s.stopc()
	select {
	case <-c:
	default:
		close(c)
	}
	<-s.done
	unix.Close(s.fd)
}

// synScan sends one SYN from src to each port of dst in [first, first+n),
// through a raw socket in h, every gap.
func synScan(t *testing.T, h *netlab.Host, src, dst string, first, n int, gap time.Duration) {
	t.Helper()
	var fd int
	if err := h.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	d := net.ParseIP(dst).To4()
	for i := 0; i < n; i++ {
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.ParseIP(src), DstIP: d}
		tcp := &layers.TCP{SrcPort: 41000, DstPort: layers.TCPPort(first + i), SYN: true, Window: 1024, Seq: uint32(i)}
		tcp.SetNetworkLayerForChecksum(ip)
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, tcp); err != nil {
			t.Fatal(err)
		}
		if err := unix.Sendto(fd, buf.Bytes(), 0, &unix.SockaddrInet4{Addr: [4]byte(d)}); err != nil {
			t.Fatalf("send SYN %d: %v", i, err)
		}
		time.Sleep(gap)
	}
}

// TestScanBlockedClientUnaffected: a client namespace with two addresses
// reaches a server through a portfwd cube; ddos sits on the client-side
// interface. From one address a scanner sends 300 SYNs to sequential ports;
// from the other a normal client keeps moving data over TCP. The scanner is
// blocked after 40 distinct ports, reported as an event and its packets
// are mirrored to a monitor namespace; the client is untouched.
func TestScanBlockedClientUnaffected(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) { testScanBlocked(t, hook) })
	}
}

func testScanBlocked(t *testing.T, hook datapath.Hook) {
	lab := netlab.NewT(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cl, err := lab.Host("c")
	must(err)
	srv, err := lab.Host("v")
	must(err)
	mon, err := lab.Host("m")
	must(err)
	cIf, err := lab.Veth(cl, "eth0", "c", "198.18.1.2/24", "198.18.1.3/24")
	must(err)
	vIf, err := lab.Veth(srv, "eth0", "v", "198.18.1.10/24")
	must(err)
	mIf, err := lab.Veth(mon, "eth0", "m")
	must(err)

	e := nftest.Engine(t)
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "fw", Type: "portfwd", Hook: hook,
			Ports: []cube.Port{{Name: "p0", Index: 0, Peer: cIf}, {Name: "p1", Index: 1, Peer: vIf}}}); err != nil {
			return err
		}
		for _, r := range []string{`{"in_port":"p0","out_port":"p1"}`, `{"in_port":"p1","out_port":"p0"}`} {
			if _, err := tp.PutEntry("fw", "rules", json.RawMessage(r)); err != nil {
				return err
			}
		}
		cfg, _ := json.Marshal(Config{Scan: &ScanConfig{DistinctPorts: 40, WindowMs: 10000, BlockSeconds: 60}, MirrorInterface: mIf})
		if err := tp.AddCube(&cube.Cube{Name: "dd", Type: "ddos", Hook: hook, Config: cfg}); err != nil {
			return err
		}
		return tp.Attach("dd", cIf, "last")
	})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	must(netlab.TCPTransfer(ctx, cl, srv, "198.18.1.10", 8080, 1<<20))

	scanner := net.ParseIP("198.18.1.3")
	atServer := sniff(t, srv, "eth0", scanner)
	atMonitor := sniff(t, mon, "eth0", scanner)

	// The client transfers while the scan runs.
	var wg sync.WaitGroup
	var clientErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 5 && clientErr == nil; i++ {
			clientErr = netlab.TCPTransfer(ctx, cl, srv, "198.18.1.10", 8081+i, 256<<10)
		}
	}()
	synScan(t, cl, "198.18.1.3", "198.18.1.10", 20000, 300, time.Millisecond)
	wg.Wait()
	must(clientErr)
	must(netlab.TCPTransfer(ctx, cl, srv, "198.18.1.10", 8090, 1<<20))
	time.Sleep(300 * time.Millisecond)
	atServer.close()
	atMonitor.close()

	// At most 40 probes (+ the one that tipped it, dropped) reach the server.
	// (The sniffer may miss the very first ones while it starts.)
	if n := atServer.syns.Load(); n > 40 || n < 30 {
		t.Errorf("server saw %d SYNs from the scanner, want 40", n)
	}
	// The monitor gets every packet of the scanner from the block on.
	got := atMonitor.syns.Load()
	if got < 250 || got > 260 {
		t.Errorf("monitor saw %d mirrored SYNs, want 260", got)
	}
	v, err := e.View(tenant.Admin, "dd", "events")
	must(err)
	evs := v.([]Event)
	if len(evs) != 1 || evs[0].Source != "198.18.1.3" || evs[0].Reason != "port-scan" || evs[0].Count != 41 || !evs[0].Mirrored {
		t.Fatalf("events %+v", evs)
	}
	t.Logf("event: %+v", evs[0])
	v, err = e.View(tenant.Admin, "dd", "blocked")
	must(err)
	if b := v.([]Blocked); len(b) != 1 || b[0].Source != "198.18.1.3" || b[0].Packets != 260 {
		t.Errorf("blocked %+v", b)
	}
	c, err := e.View(tenant.Admin, "dd", "counters")
	must(err)
	for _, x := range c.([]counters.Counter) {
		if (x.Name == "mirrored" || x.Name == "dropped_blocked") && x.Value != 260 {
			t.Errorf("counter %s = %d, want 260", x.Name, x.Value)
		}
	}
	t.Logf("counters %+v, monitor saw %d, server %d", c, got, atServer.syns.Load())
	// Normal traffic still flows both ways (ping too).
	must(cl.Ping(ctx, "198.18.1.10", 2))
}
