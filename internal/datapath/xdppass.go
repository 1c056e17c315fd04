package datapath

import (
	"strings"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// dropXDPPass removes the pass-through program EnsureRedirectTarget put on an
// interface (through netlink) so that a stub can take its place: happens when
// both ends of a veth pair are peers of XDP cubes. Reports whether it did.
// Any XDP program accepts redirected frames, so the stub serves as well.
func dropXDPPass(ifindex int) bool {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return false
	}
	x := l.Attrs().Xdp
	if x == nil || !x.Attached || x.ProgId == 0 {
		return false
	}
	p, err := ebpf.NewProgramFromID(ebpf.ProgramID(x.ProgId))
	if err != nil {
		return false
	}
	info, err := p.Info()
	p.Close()
	if err != nil || !strings.HasPrefix("edgenf_xdp_pass", info.Name) || info.Name == "" {
		return false
	}
	return netlink.LinkSetXdpFdWithFlags(l, -1, nl.XDP_FLAGS_DRV_MODE) == nil
}
