package stf

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// udpFrame is an Ethernet/IPv4/UDP frame 198.18.0.1:1234 -> 198.18.0.2:5678
// with n payload bytes (a pattern that makes odd and even bytes differ) and
// its correct UDP checksum.
func udpFrame(n int) []byte {
	f := make([]byte, 42+n)
	copy(f, []byte{0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00})
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+n))
	ip[8], ip[9] = 64, 17
	copy(ip[12:], []byte{198, 18, 0, 1, 198, 18, 0, 2})
	udp := f[34:]
	binary.BigEndian.PutUint16(udp[0:], 1234)
	binary.BigEndian.PutUint16(udp[2:], 5678)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+n))
	for i := range n {
		udp[8+i] = byte(i*7 + 3)
	}
	// RFC 768: the pseudo-header, the UDP header (checksum 0), the payload
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(ip[12:20])
	add([]byte{0, 17, byte((8 + n) >> 8), byte(8 + n)})
	add(udp)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(udp[6:], ^uint16(sum))
	return f
}

// payloadSizes are the payload lengths TestPayloadChecksum runs: empty,
// odd and even, around the 512-byte chunks the datapath sums, a 1,500-byte
// MTU's, and past 1,500 bytes (where the sum used to stop), up to what a
// test run takes (a page less the kernel's head- and tailroom).
var payloadSizes = []int{0, 1, 2, 3, 4, 5, 7, 64, 511, 512, 513, 1023, 1024, 1025, 1472, 1501, 2048, 3001}

// update_checksum_with_payload and verify_checksum_with_payload sum the
// whole payload, whatever its length, at both hooks (payload_csum.p4): a
// frame whose checksum is right leaves by port 1 with the checksum the
// program computed again from 0, equal to the one it came with; one with a
// payload byte changed fails the verification and leaves by port 2.
func TestPayloadChecksum(t *testing.T) {
	res := compileFile(t, "../testdata/payload_csum.p4")
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) {
			r := load(t, res, hook)
			for _, n := range payloadSizes {
				f := udpFrame(n)
				want := binary.BigEndian.Uint16(f[40:])
				o, err := r.Send(0, f)
				if err != nil || o == nil {
					t.Fatalf("payload %d: %+v %v", n, o, err)
				}
				if o.Port != 1 || len(o.Data) != len(f) {
					t.Errorf("payload %d: port %d, %d bytes out (want port 1, %d bytes): the checksum did not verify", n, o.Port, len(o.Data), len(f))
					continue
				}
				if got := binary.BigEndian.Uint16(o.Data[40:]); got != want {
					t.Errorf("payload %d: checksum %#04x, want %#04x", n, got, want)
				}
				if n == 0 {
					continue
				}
				f[len(f)-1] ^= 0x10 // the last byte: the tail's
				if o, err := r.Send(0, f); err != nil || o == nil || o.Port != 2 {
					t.Errorf("payload %d, last byte changed: %+v %v (want port 2)", n, o, err)
				}
				f[len(f)-1] ^= 0x10
				f[42] ^= 0x01 // the first byte: the first chunk's
				if o, err := r.Send(0, f); err != nil || o == nil || o.Port != 2 {
					t.Errorf("payload %d, first byte changed: %+v %v (want port 2)", n, o, err)
				}
			}
		})
	}
}

// BenchmarkPayloadChecksum is the per-packet cost of payload_csum.p4
// (verify_checksum_with_payload, then update_checksum_with_payload: the
// payload summed twice) at both hooks, by payload length.
func BenchmarkPayloadChecksum(b *testing.B) {
	res := compileFile(b, "../testdata/payload_csum.p4")
	for _, hook := range []string{"xdp", "tc"} {
		for _, n := range []int{18, 512, 1458} { // 64-, 576- and 1,500-byte frames
			b.Run(fmt.Sprintf("%s-%d", hook, 42+n), func(b *testing.B) {
				r := load(b, res, hook)
				f := udpFrame(n)
				if o, err := r.Send(0, f); err != nil || o == nil || o.Port != 1 {
					b.Fatalf("not verified: %+v %v", o, err)
				}
				b.ResetTimer()
				_, d, err := r.Prog.Benchmark(f, b.N, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(d.Nanoseconds()), "ns/packet")
			})
		}
	}
}
