package doctor

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// xdp reports whether ifname runs XDP programs natively (in its driver) or
// in the generic, slower mode: from the program attached, if any, else from
// the XDP features the driver declares (netdev netlink family, Linux 6.3).
func xdp(ifname string) Result {
	r := Result{Check: "xdp " + ifname}
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		r.Status, r.Detail = Fail, fmt.Sprintf("no interface %s: %v", ifname, err)
		r.Fix = "create it, or change the topology's peers (edgenf get topology)"
		return r
	}
	driver := l.Type()
	if x := l.Attrs().Xdp; x != nil && x.Attached {
		switch x.AttachMode {
		case nl.XDP_ATTACHED_DRV, nl.XDP_ATTACHED_HW:
			r.Status, r.Detail = OK, fmt.Sprintf("native XDP (%s driver, program %d attached)", driver, x.ProgId)
		default:
			r.Status, r.Detail = Warn, fmt.Sprintf("generic XDP (%s driver, program %d attached in skb mode): slower than native", driver, x.ProgId)
			r.Fix = "use hook tc for cubes on this interface, or a NIC whose driver has native XDP"
		}
		return r
	}
	feat, err := xdpFeatures(l.Attrs().Index)
	switch {
	case err != nil:
		r.Status, r.Detail = Skip, fmt.Sprintf("no XDP program attached, and the driver's XDP features cannot be read (%v; Linux 6.3 reports them)", err)
	case feat&xdpActBasic != 0 && feat&xdpActRedirect != 0:
		r.Status, r.Detail = OK, fmt.Sprintf("native XDP available (%s driver)", driver)
	default:
		r.Status, r.Detail = Warn, fmt.Sprintf("%s driver has no native XDP (features %#x): XDP cubes here run in generic mode, slower", driver, feat)
		r.Fix = "use hook tc for cubes on this interface, or a NIC whose driver has native XDP"
	}
	return r
}

// netdev generic netlink family (include/uapi/linux/netdev.h).
const (
	netdevCmdDevGet       = 1
	netdevAttrIfindex     = 1
	netdevAttrXDPFeatures = 3
	xdpActBasic           = 1 << 0
	xdpActRedirect        = 1 << 1
)

func xdpFeatures(ifindex int) (uint64, error) {
	fam, err := netlink.GenlFamilyGet("netdev")
	if err != nil {
		return 0, err
	}
	req := nl.NewNetlinkRequest(int(fam.ID), unix.NLM_F_REQUEST)
	req.AddData(&nl.Genlmsg{Command: netdevCmdDevGet, Version: uint8(fam.Version)})
	req.AddData(nl.NewRtAttr(netdevAttrIfindex, nl.Uint32Attr(uint32(ifindex))))
	msgs, err := req.Execute(unix.NETLINK_GENERIC, 0)
	if err != nil {
		return 0, err
	}
	for _, m := range msgs {
		if len(m) < nl.SizeofGenlmsg {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[nl.SizeofGenlmsg:])
		if err != nil {
			return 0, err
		}
		for _, a := range attrs {
			if a.Attr.Type == netdevAttrXDPFeatures && len(a.Value) == 8 {
				return nl.NativeEndian().Uint64(a.Value), nil
			}
		}
	}
	return 0, errors.New("no xdp-features attribute")
}
