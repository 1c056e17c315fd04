package cube

import "net/netip"

// AttachmentInfo is implemented by the engine's Handle: a transparent cube's
// controller can ask where the cube is attached and which addresses that
// point has (NAT masquerade needs the address of its point). It is an
// optional interface so that other Handle implementations (test rigs) keep
// compiling; controllers type-assert it.
type AttachmentInfo interface {
	// AttachPoint returns the point the cube is attached to ("cube:port" or
	// a Linux interface name; "" when detached) and the point's addresses:
	// a cube port's Addresses, or the interface's configured addresses.
	AttachPoint() (point string, addrs []netip.Prefix)
}
