package netlab

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Exec runs a command inside the host's namespace (`ip netns exec`) and
// returns its combined output; the error includes the output.
func (h *Host) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("netlab: %s: %s %s: %w: %s", h.Name, name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// ExecInput is Exec with stdin fed from input.
func (h *Host) ExecInput(ctx context.Context, input []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
	cmd.Stdin = bytes.NewReader(input)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("netlab: %s: %s %s: %w: %s", h.Name, name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// withDefault bounds ctx by d when it has no deadline of its own.
func withDefault(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// Ping sends count ICMP (v4) or ICMPv6 echo requests to dst from inside the
// host, one every 200 ms, waiting at most 1 s for each reply (like
// `ping -c count -W 1 -i 0.2`, implemented natively so no ping binary is
// needed). It fails, with a ping-like transcript, if any reply is missing.
func (h *Host) Ping(ctx context.Context, dst string, count int) error {
	ip := net.ParseIP(dst)
	if ip == nil {
		return fmt.Errorf("netlab: ping: bad address %q", dst)
	}
	if count <= 0 {
		count = 1
	}
	ctx, cancel := withDefault(ctx, time.Duration(count)*1200*time.Millisecond+2*time.Second)
	defer cancel()
	v4 := ip.To4() != nil
	var conn net.PacketConn
	err := h.Do(func() error {
		var err error
		if v4 {
			conn, err = net.ListenPacket("ip4:icmp", "0.0.0.0")
		} else {
			conn, err = net.ListenPacket("ip6:ipv6-icmp", "::")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("netlab: ping %s from %s: %w", dst, h.Name, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()

	id := uint16(rand.Uint32())
	var log strings.Builder
	fmt.Fprintf(&log, "PING %s from %s\n", dst, h.Name)
	lost := 0
	buf := make([]byte, 1500)
	for seq := 1; seq <= count; seq++ {
		start := time.Now()
		msg := echoRequest(v4, id, uint16(seq))
		if _, err := conn.WriteTo(msg, &net.IPAddr{IP: ip}); err != nil {
			fmt.Fprintf(&log, "seq=%d send error: %v\n", seq, err)
			lost++
		} else {
			got := false
			deadline := start.Add(time.Second)
			for !got && ctx.Err() == nil && time.Now().Before(deadline) {
				conn.SetReadDeadline(deadline)
				n, from, err := conn.ReadFrom(buf)
				if err != nil {
					break
				}
				if isEchoReply(v4, buf[:n], id, uint16(seq)) {
					got = true
					fmt.Fprintf(&log, "%d bytes from %v: icmp_seq=%d time=%v\n", n, from, seq, time.Since(start).Round(time.Microsecond))
				}
			}
			if !got {
				fmt.Fprintf(&log, "icmp_seq=%d no reply\n", seq)
				lost++
			}
		}
		if ctx.Err() != nil {
			lost += count - seq
			break
		}
		if seq < count {
			if w := 200*time.Millisecond - time.Since(start); w > 0 {
				select {
				case <-time.After(w):
				case <-ctx.Done():
				}
			}
		}
	}
	fmt.Fprintf(&log, "%d packets transmitted, %d received", count, count-lost)
	if lost > 0 {
		return fmt.Errorf("netlab: ping %s from %s: %d/%d lost:\n%s", dst, h.Name, lost, count, log.String())
	}
	return nil
}

func echoRequest(v4 bool, id, seq uint16) []byte {
	m := make([]byte, 8+32)
	if v4 {
		m[0] = 8
	} else {
		m[0] = 128 // the kernel fills in the ICMPv6 checksum
	}
	binary.BigEndian.PutUint16(m[4:], id)
	binary.BigEndian.PutUint16(m[6:], seq)
	for i := 8; i < len(m); i++ {
		m[i] = byte(i)
	}
	if v4 {
		binary.BigEndian.PutUint16(m[2:], inetChecksum(m))
	}
	return m
}

func isEchoReply(v4 bool, b []byte, id, seq uint16) bool {
	if len(b) < 8 {
		return false
	}
	want := byte(0)
	if !v4 {
		want = 129
	}
	return b[0] == want && b[1] == 0 && binary.BigEndian.Uint16(b[4:]) == id && binary.BigEndian.Uint16(b[6:]) == seq
}

func inetChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// udpMagic marks UDPFlow datagrams: magic(4) flow(4) seq(8) then a pattern.
const udpMagic = 0xED6E4F10

func fillUDP(b []byte, flow uint32, seq uint64) {
	binary.BigEndian.PutUint32(b[0:], udpMagic)
	binary.BigEndian.PutUint32(b[4:], flow)
	binary.BigEndian.PutUint64(b[8:], seq)
	x := byte(seq*31 + 7)
	for i := 16; i < len(b); i++ {
		b[i] = x + byte(i)
	}
}

func checkUDP(b []byte, flow uint32, n int) (uint64, bool) {
	if len(b) < 16 || binary.BigEndian.Uint32(b[0:]) != udpMagic || binary.BigEndian.Uint32(b[4:]) != flow {
		return 0, false
	}
	seq := binary.BigEndian.Uint64(b[8:])
	if seq >= uint64(n) {
		return 0, false
	}
	x := byte(seq*31 + 7)
	for i := 16; i < len(b); i++ {
		if b[i] != x+byte(i) {
			return 0, false
		}
	}
	return seq, true
}

func setBufForce(c syscall.Conn, opt int, size int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, size)
	})
}

// UDPFlow sends n datagrams of size bytes (UDP payload, at least 16) from
// host from to dst:port, at most pps per second (0: 20000), and counts the
// datagrams that a receiver bound to port in host to gets with a valid
// payload (each sequence number once). The whole exchange is bounded by ctx
// and by n/pps + 10 s. The error reports corrupt datagrams, socket errors or
// the context; loss is not an error (compare sent and received).
func UDPFlow(ctx context.Context, from *Host, to *Host, dst string, port int, n int, size int, pps int) (sent, received int, err error) {
	ip := net.ParseIP(dst)
	if ip == nil {
		return 0, 0, fmt.Errorf("netlab: udpflow: bad address %q", dst)
	}
	if size < 16 {
		size = 16
	}
	if size > 65000 {
		return 0, 0, fmt.Errorf("netlab: udpflow: size %d too large", size)
	}
	if pps <= 0 {
		pps = 20000
	}
	ctx, cancel := withDefault(ctx, time.Duration(n)*time.Second/time.Duration(pps)+10*time.Second)
	defer cancel()

	var rx *net.UDPConn
	if err := to.Do(func() error {
		var err error
		rx, err = net.ListenUDP("udp", &net.UDPAddr{Port: port})
		return err
	}); err != nil {
		return 0, 0, fmt.Errorf("netlab: udpflow: listen in %s: %w", to.Name, err)
	}
	defer rx.Close()
	setBufForce(rx, syscall.SO_RCVBUFFORCE, 32<<20)

	var tx *net.UDPConn
	if err := from.Do(func() error {
		var err error
		if ip.To4() != nil {
			tx, err = net.ListenUDP("udp4", nil)
		} else {
			tx, err = net.ListenUDP("udp6", nil)
		}
		return err
	}); err != nil {
		return 0, 0, fmt.Errorf("netlab: udpflow: socket in %s: %w", from.Name, err)
	}
	defer tx.Close()
	setBufForce(tx, syscall.SO_SNDBUFFORCE, 4<<20)

	flow := rand.Uint32()
	// Warm up: resolve neighbours (an unresolved neighbour queues only
	// ~200 kB and drops the rest) with probe datagrams that the receiver
	// answers by closing warm; probes are not counted.
	if err := udpWarmup(ctx, tx, rx, &net.UDPAddr{IP: ip, Port: port}, flow); err != nil {
		return 0, 0, err
	}
	seen := make([]bool, n)
	var bad int
	var rxErr error
	senderDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 65536)
		idleUntil := time.Time{}
		for received < n {
			select {
			case <-senderDone:
				if idleUntil.IsZero() {
					idleUntil = time.Now().Add(time.Second)
				}
			default:
			}
			dl := time.Now().Add(100 * time.Millisecond)
			if !idleUntil.IsZero() && idleUntil.Before(dl) {
				dl = idleUntil
			}
			if ctx.Err() != nil {
				return
			}
			rx.SetReadDeadline(dl)
			m, _, err := rx.ReadFromUDP(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					if !idleUntil.IsZero() && !time.Now().Before(idleUntil) && !Queued(rx) {
						return // sender finished and nothing came for 1 s
					}
					continue
				}
				rxErr = err
				return
			}
			if !idleUntil.IsZero() {
				idleUntil = time.Now().Add(time.Second)
			}
			seq, ok := checkUDP(buf[:m], flow, n)
			if !ok {
				if m >= 16 && binary.BigEndian.Uint32(buf[0:]) == udpMagic && binary.BigEndian.Uint32(buf[4:]) == flow && binary.BigEndian.Uint64(buf[8:]) != probeSeq {
					bad++
				}
				continue // a stray datagram of another flow
			}
			if m != size {
				bad++
				continue
			}
			if !seen[seq] {
				seen[seq] = true
				received++
			}
		}
	}()

	dstAddr := &net.UDPAddr{IP: ip, Port: port}
	payload := make([]byte, size)
	start := time.Now()
	var txErr error
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			txErr = ctx.Err()
			break
		}
		// Pace: packet i is due at start + i/pps.
		if due := start.Add(time.Duration(i) * time.Second / time.Duration(pps)); time.Until(due) > time.Millisecond {
			time.Sleep(time.Until(due))
		}
		fillUDP(payload, flow, uint64(i))
		if _, err := tx.WriteToUDP(payload, dstAddr); err != nil {
			if errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EAGAIN) {
				time.Sleep(time.Millisecond)
				i-- // retry this one
				continue
			}
			txErr = err
			break
		}
		sent++
	}
	close(senderDone)
	wg.Wait()
	switch {
	case txErr != nil:
		err = fmt.Errorf("netlab: udpflow send: %w", txErr)
	case rxErr != nil:
		err = fmt.Errorf("netlab: udpflow receive: %w", rxErr)
	case bad > 0:
		err = fmt.Errorf("netlab: udpflow: %d corrupt datagrams", bad)
	case ctx.Err() != nil && received < sent:
		err = fmt.Errorf("netlab: udpflow: %w (%d/%d received)", ctx.Err(), received, sent)
	}
	return sent, received, err
}

// queued reports whether a datagram waits in c's receive queue. A receiver
// that a busy machine kept from running past its read deadline gets a
// timeout even with datagrams queued (Go checks the deadline first): it
// asks this before it takes the silence for the end of a flow.
func Queued(c *net.UDPConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
	return n > 0
}

// TCPTransfer sends nbytes of pseudo-random data over one TCP connection from
// host from to dst:port (a listener in host to) and checks that exactly the
// same bytes arrive (length and SHA-256). Bounded by ctx, and by 60 s when ctx
// has no deadline.
func TCPTransfer(ctx context.Context, from, to *Host, dst string, port int, nbytes int) error {
	ip := net.ParseIP(dst)
	if ip == nil {
		return fmt.Errorf("netlab: tcp: bad address %q", dst)
	}
	ctx, cancel := withDefault(ctx, 60*time.Second)
	defer cancel()

	var ln *net.TCPListener
	if err := to.Do(func() error {
		var err error
		ln, err = net.ListenTCP("tcp", &net.TCPAddr{Port: port})
		return err
	}); err != nil {
		return fmt.Errorf("netlab: tcp: listen in %s: %w", to.Name, err)
	}
	defer ln.Close()
	dl, _ := ctx.Deadline()
	ln.SetDeadline(dl)

	type result struct {
		n   int64
		sum [32]byte
		err error
	}
	rch := make(chan result, 1)
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			rch <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(dl)
		stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
		defer stop()
		hs := sha256.New()
		n, err := io.Copy(hs, c)
		var r result
		r.n, r.err = n, err
		copy(r.sum[:], hs.Sum(nil))
		rch <- r
	}()

	var conn net.Conn
	d := net.Dialer{}
	if err := from.Do(func() error {
		// The socket is created (and connected) on the thread inside
		// the namespace; it keeps working from any goroutine afterwards.
		var err error
		conn, err = d.DialContext(ctx, "tcp", net.JoinHostPort(dst, fmt.Sprint(port)))
		return err
	}); err != nil {
		ln.Close()
		<-rch
		return fmt.Errorf("netlab: tcp: connect from %s to %s: %w", from.Name, dst, err)
	}
	conn.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()

	src := rand.NewChaCha8([32]byte{1, 2, 3, byte(port), byte(port >> 8)})
	hs := sha256.New()
	buf := make([]byte, 64<<10)
	left := nbytes
	var werr error
	for left > 0 {
		k := min(left, len(buf))
		src.Read(buf[:k])
		hs.Write(buf[:k])
		if _, err := conn.Write(buf[:k]); err != nil {
			werr = err
			break
		}
		left -= k
	}
	conn.(*net.TCPConn).CloseWrite()
	r := <-rch
	conn.Close()
	var want [32]byte
	copy(want[:], hs.Sum(nil))
	switch {
	case werr != nil:
		return fmt.Errorf("netlab: tcp: send after %d/%d bytes: %w", nbytes-left, nbytes, werr)
	case r.err != nil:
		return fmt.Errorf("netlab: tcp: receive (%d bytes): %w", r.n, r.err)
	case r.n != int64(nbytes):
		return fmt.Errorf("netlab: tcp: received %d bytes, sent %d", r.n, nbytes)
	case r.sum != want:
		return fmt.Errorf("netlab: tcp: content differs (sha256)")
	}
	return nil
}

const probeSeq = ^uint64(0)

// udpWarmup sends a probe every 20 ms until one arrives or 3 s pass (not an
// error: the flow then shows the loss).
func udpWarmup(ctx context.Context, tx, rx *net.UDPConn, dst *net.UDPAddr, flow uint32) error {
	probe := make([]byte, 16)
	fillUDP(probe, flow, probeSeq)
	buf := make([]byte, 65536)
	end := time.Now().Add(3 * time.Second)
	for time.Now().Before(end) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if _, err := tx.WriteToUDP(probe, dst); err != nil && !errors.Is(err, syscall.ENOBUFS) {
			return fmt.Errorf("netlab: udpflow warm-up: %w", err)
		}
		rx.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		for {
			m, _, err := rx.ReadFromUDP(buf)
			if err != nil {
				break
			}
			if m == 16 && binary.BigEndian.Uint32(buf[0:]) == udpMagic && binary.BigEndian.Uint32(buf[4:]) == flow && binary.BigEndian.Uint64(buf[8:]) == probeSeq {
				// Drain other probes still in flight.
				for {
					rx.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
					if _, _, err := rx.ReadFromUDP(buf); err != nil {
						return nil
					}
				}
			}
		}
	}
	return nil
}

// IPStats reads the host's IPv4 counters (the "Ip:" lines of
// /proc/net/snmp in its namespace: InReceives, ReasmReqds, ReasmOKs,
// ReasmFails, ...).
func (h *Host) IPStats() (map[string]uint64, error) {
	var b []byte
	if err := h.Do(func() (err error) {
		b, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	}); err != nil {
		return nil, fmt.Errorf("netlab: IP counters of %s: %w", h.Name, err)
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Ip:" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		out := map[string]uint64{}
		for i, v := range f[1:] {
			if i < len(names) {
				n, _ := strconv.ParseUint(v, 10, 64)
				out[names[i]] = n
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("netlab: no Ip: counters for %s", h.Name)
}

// IP6Stats reads the host's IPv6 counters (/proc/net/snmp6 in its
// namespace, without the "Ip6" prefix: ReasmReqds, ReasmOKs, InReceives, ...).
func (h *Host) IP6Stats() (map[string]uint64, error) {
	var b []byte
	if err := h.Do(func() (err error) {
		b, err = os.ReadFile("/proc/thread-self/net/snmp6")
		return err
	}); err != nil {
		return nil, fmt.Errorf("netlab: IPv6 counters of %s: %w", h.Name, err)
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && strings.HasPrefix(f[0], "Ip6") {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			out[strings.TrimPrefix(f[0], "Ip6")] = n
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("netlab: no Ip6 counters for %s", h.Name)
	}
	return out, nil
}

// SendRawIPv4 sends one IPv4 packet, header included as given (source
// address, fragment fields, ...), from inside the host, towards the
// packet's destination address.
func (h *Host) SendRawIPv4(pkt []byte) error {
	if len(pkt) < 20 {
		return fmt.Errorf("netlab: raw IPv4 packet of %d bytes", len(pkt))
	}
	return h.Do(func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.IPPROTO_RAW)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		sa := &syscall.SockaddrInet4{}
		copy(sa.Addr[:], pkt[16:20])
		return syscall.Sendto(fd, pkt, 0, sa)
	})
}
