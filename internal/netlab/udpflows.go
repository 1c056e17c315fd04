package netlab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"
)

// PacedFlow is one paced UDP flow: PPS datagrams of Payload bytes (at least
// 16) a second to destination port Port.
type PacedFlow struct {
	Port, PPS, Payload int
}

// FlowResult is what one paced UDP flow did.
type FlowResult struct {
	Sent, Recv int
	Elapsed    time.Duration // first to last datagram sent
	// MaxGap is the longest time between two datagrams sent: a sender the
	// shared machine descheduled (the flow then catches up in a burst, which
	// a policer with a shorter burst than the gap partly drops).
	MaxGap time.Duration
	Delays []time.Duration // one-way, per datagram received
}

// P99 is the 99th percentile of the one-way delays (an hour if none
// arrived).
func (f FlowResult) P99() time.Duration {
	d := slices.Clone(f.Delays)
	slices.Sort(d)
	if len(d) == 0 {
		return time.Hour
	}
	return d[len(d)*99/100]
}

// Delivered is the share of the datagrams sent that arrived.
func (f FlowResult) Delivered() float64 {
	if f.Sent == 0 {
		return 0
	}
	return float64(f.Recv) / float64(f.Sent)
}

// flowMagic marks the datagrams of PacedUDP ("slic"), so a stray one is
// not counted.
const flowMagic = 0x736c6963

// PacedUDP runs the flows from src to dstIP (an address of dst) at the same
// time, each for dur; receivers in dst count the datagrams and the one-way
// delay of each (the namespaces share the clock). It is bounded: dur + 3 s,
// or ctx.
func PacedUDP(ctx context.Context, src, dst *Host, dstIP net.IP, dur time.Duration, flows []PacedFlow) ([]FlowResult, error) {
	ctx, cancel := context.WithTimeout(ctx, dur+3*time.Second)
	defer cancel()
	out := make([]FlowResult, len(flows))
	rxs := make([]*net.UDPConn, len(flows))
	for i, f := range flows {
		if f.Payload < 16 {
			return nil, fmt.Errorf("flow to port %d: a payload of %d bytes, at least 16", f.Port, f.Payload)
		}
		if err := dst.Do(func() error {
			var err error
			rxs[i], err = net.ListenUDP("udp4", &net.UDPAddr{Port: f.Port})
			return err
		}); err != nil {
			return nil, err
		}
		defer rxs[i].Close()
		setBufForce(rxs[i], syscall.SO_RCVBUFFORCE, 16<<20)
	}
	var rxWG, txWG sync.WaitGroup
	sendersDone := make(chan struct{})
	for i, f := range flows {
		rxWG.Add(1)
		go func() {
			defer rxWG.Done()
			buf := make([]byte, 65536)
			var quietSince time.Time
			for ctx.Err() == nil {
				rxs[i].SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				n, _, err := rxs[i].ReadFromUDP(buf)
				now := time.Now()
				if err != nil {
					select {
					case <-sendersDone:
						if quietSince.IsZero() {
							quietSince = now
						} else if now.Sub(quietSince) > 700*time.Millisecond && !Queued(rxs[i]) {
							return // queues drained
						}
					default:
					}
					continue
				}
				quietSince = time.Time{}
				if n == f.Payload && binary.BigEndian.Uint32(buf) == flowMagic {
					out[i].Recv++
					out[i].Delays = append(out[i].Delays, now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(buf[8:])))))
				}
			}
		}()
	}
	var sendErr error
	var errOnce sync.Once
	for i, f := range flows {
		var tx *net.UDPConn
		if err := src.Do(func() error {
			var err error
			tx, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: dstIP, Port: f.Port})
			return err
		}); err != nil {
			close(sendersDone)
			return nil, err
		}
		defer tx.Close()
		setBufForce(tx, syscall.SO_SNDBUFFORCE, 4<<20)
		txWG.Add(1)
		go func() {
			defer txWG.Done()
			b := make([]byte, f.Payload)
			binary.BigEndian.PutUint32(b, flowMagic)
			start := time.Now()
			last := start
			total := int(float64(f.PPS) * dur.Seconds())
			for out[i].Sent < total && ctx.Err() == nil {
				due := int(float64(f.PPS) * time.Since(start).Seconds())
				if out[i].Sent >= due {
					time.Sleep(time.Millisecond)
					continue
				}
				binary.BigEndian.PutUint64(b[8:], uint64(time.Now().UnixNano()))
				if _, err := tx.Write(b); err != nil {
					if errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EAGAIN) {
						time.Sleep(200 * time.Microsecond)
						continue
					}
					errOnce.Do(func() { sendErr = fmt.Errorf("send to port %d: %w", f.Port, err) })
					return
				}
				out[i].Sent++
				now := time.Now()
				out[i].MaxGap = max(out[i].MaxGap, now.Sub(last))
				last = now
			}
			out[i].Elapsed = time.Since(start)
		}()
	}
	txWG.Wait()
	close(sendersDone)
	rxWG.Wait()
	return out, sendErr
}
