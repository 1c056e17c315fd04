package slicer

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The HTB tree a slicer owns on an egress interface. The datapath picks a
// leaf class by writing its class id into skb->priority at TC (htb_classify
// takes skb->priority as a class id before it consults any filter), so no
// tc filter is needed:
//
//	ed00:      the root qdisc (htb, default class ed00:2)
//	ed00:1     the link: rate = ceil = the egress rate
//	ed00:2     best effort: traffic of no slice (guaranteed nothing)
//	ed00:8+b   priority band b (0 highest .. 7): ClassBand(b)
//	ed00:100+i slice id i: rate = its guaranteed minimum, ceil = its rate
//	           limit (or the link), prio = its priority class
const (
	QdiscMajor   = 0xed00
	classRoot    = 0x1
	classDefault = 0x2
	classBand0   = 0x8
	classSlice0  = 0x100
)

// ClassSlice is the skb->priority value (the HTB class id) of slice id.
func ClassSlice(id int) uint32 { return QdiscMajor<<16 | uint32(classSlice0+id) }

// ClassBand is the skb->priority value that puts a frame of no slice into
// priority band b (0 highest .. 7 lowest) on a slicer's egress interfaces.
// Other NFs raise a frame's priority with it (an INT "raise priority"
// action, a P4 program's standard_metadata.priority).
func ClassBand(b int) uint32 { return QdiscMajor<<16 | uint32(classBand0+b) }

var qdiscHandle = netlink.MakeHandle(QdiscMajor, 0)

// class is one HTB class the slicer wants.
type class struct {
	minor      uint16
	rate, ceil uint64 // bits/s
	prio       uint32
}

func wantClasses(e Egress, list []*Slice) []class {
	link := e.RateBps
	// Traffic of no slice is guaranteed nothing: it borrows what the
	// slices leave (HTB wants a rate; 8 kbit/s is its floor).
	const floor = 8000
	out := []class{{classDefault, floor, link, 7}}
	for b := 0; b < 8; b++ {
		out = append(out, class{uint16(classBand0 + b), floor, link, uint32(b)})
	}
	for _, s := range list {
		rate := s.MinBps
		if rate == 0 {
			rate = 8000 // HTB wants a rate; the slice borrows the rest
		}
		ceil := link
		if s.RateBps > 0 && s.RateBps < ceil {
			ceil = s.RateBps
		}
		if rate > ceil {
			rate = ceil
		}
		out = append(out, class{uint16(classSlice0 + s.ID), rate, ceil, uint32(s.priority())})
	}
	return out
}

// classReplace creates or changes an HTB class (tests count the calls).
var classReplace = netlink.ClassReplace

// ensureHTB makes the interface's root qdisc the slicer's HTB tree with
// exactly the classes of list, and returns them (by minor, the link's
// class included). last are the classes this controller wrote there
// before (nil: unknown): with them, only the classes that differ are
// replaced or deleted, so a change of one slice costs its class; without
// them, or when the tree is not there any more, every class is written
// and those of no slice are deleted. A root qdisc of another kind or
// handle is replaced: the framework owns the egress qdisc of the
// interfaces it shapes at.
func ensureHTB(e Egress, list []*Slice, last map[uint16]class) (map[uint16]class, error) {
	lk, err := netlink.LinkByName(e.Interface)
	if err != nil {
		return nil, fmt.Errorf("egress interface %s: %w", e.Interface, err)
	}
	idx := lk.Attrs().Index
	if !ownsRoot(lk, "htb") {
		q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: idx, Handle: qdiscHandle, Parent: netlink.HANDLE_ROOT})
		q.Defcls = classDefault
		if err := netlink.QdiscReplace(q); err != nil {
			return nil, fmt.Errorf("htb qdisc on %s: %w", e.Interface, err)
		}
		last = nil
	}
	rootHandle := netlink.MakeHandle(QdiscMajor, classRoot)
	htbClass := func(c class) *netlink.HtbClass {
		parent := rootHandle
		if c.minor == classRoot {
			parent = qdiscHandle
		}
		return netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: idx, Parent: parent, Handle: netlink.MakeHandle(QdiscMajor, c.minor)},
			netlink.HtbClassAttrs{Rate: c.rate, Ceil: c.ceil, Prio: c.prio})
	}
	want := append([]class{{classRoot, e.RateBps, e.RateBps, 0}}, wantClasses(e, list)...)
	tree := make(map[uint16]class, len(want))
	for _, c := range want {
		tree[c.minor] = c
		if old, ok := last[c.minor]; ok && old == c {
			continue
		}
		if err := classReplace(htbClass(c)); err != nil {
			return nil, fmt.Errorf("htb class %s on %s: %w", netlink.HandleStr(netlink.MakeHandle(QdiscMajor, c.minor)), e.Interface, err)
		}
	}
	gone := func(minor uint16, cl netlink.Class) error {
		if _, ok := tree[minor]; ok {
			return nil
		}
		if err := netlink.ClassDel(cl); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove htb class %s on %s: %w", netlink.HandleStr(netlink.MakeHandle(QdiscMajor, minor)), e.Interface, err)
		}
		return nil
	}
	if last != nil {
		for minor, c := range last {
			if err := gone(minor, htbClass(c)); err != nil {
				return nil, err
			}
		}
		return tree, nil
	}
	have, err := netlink.ClassList(lk, qdiscHandle)
	if err != nil {
		return nil, err
	}
	for _, c := range have {
		if err := gone(uint16(c.Attrs().Handle&0xffff), c); err != nil {
			return nil, err
		}
	}
	return tree, nil
}

// ownsRoot reports whether the interface's root qdisc is the slicer's (of
// kind, or of any kind for "").
func ownsRoot(lk netlink.Link, kind string) bool {
	qs, err := netlink.QdiscList(lk)
	if err != nil {
		return false
	}
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent == netlink.HANDLE_ROOT && a.Handle == qdiscHandle && (kind == "" || q.Type() == kind) {
			return true
		}
	}
	return false
}

// removeHTB deletes the slicer's qdisc (its HTB tree, or fq) from the interface, if it is there
// (the interface may be gone).
func removeHTB(ifname string) error {
	lk, err := netlink.LinkByName(ifname)
	if err != nil {
		return nil
	}
	if !ownsRoot(lk, "") {
		return nil
	}
	q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: lk.Attrs().Index, Handle: qdiscHandle, Parent: netlink.HANDLE_ROOT})
	if err := netlink.QdiscDel(q); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("remove htb qdisc on %s: %w", ifname, err)
	}
	return nil
}

// ClassStats is what the kernel counts for one HTB class.
type ClassStats struct {
	Interface  string `json:"interface"`
	Class      string `json:"class"`
	Packets    uint64 `json:"packets"`
	Bytes      uint64 `json:"bytes"`
	Drops      uint64 `json:"drops"`      // dropped by the shaper (queue full)
	Overlimits uint64 `json:"overlimits"` // times the class had to wait
	Backlog    uint64 `json:"backlog_bytes"`
	Queued     uint64 `json:"queued_packets"`
}

// classStats reads the classes of the slicer's tree on ifname by minor.
func classStats(ifname string) (map[uint16]ClassStats, error) {
	lk, err := netlink.LinkByName(ifname)
	if err != nil {
		return nil, err
	}
	have, err := netlink.ClassList(lk, qdiscHandle)
	if err != nil {
		return nil, err
	}
	out := map[uint16]ClassStats{}
	for _, c := range have {
		a := c.Attrs()
		cs := ClassStats{Interface: ifname, Class: netlink.HandleStr(a.Handle)}
		if st := a.Statistics; st != nil {
			if st.Basic != nil {
				cs.Packets, cs.Bytes = uint64(st.Basic.Packets), st.Basic.Bytes
			}
			if st.Queue != nil {
				cs.Drops, cs.Overlimits = uint64(st.Queue.Drops), uint64(st.Queue.Overlimits)
				cs.Backlog, cs.Queued = uint64(st.Queue.Backlog), uint64(st.Queue.Qlen)
			}
		}
		out[uint16(a.Handle&0xffff)] = cs
	}
	return out, nil
}

// edtHorizon: a frame that would leave more than this after now is dropped
// rather than queued (Cilium's default drop horizon is 2 s).
const edtHorizon = uint64(2e9)

// ensureFQ makes sch_fq the interface's root qdisc, for EDT shaping: fq
// holds each frame until the departure time the slicer wrote. Kernels
// without sch_fq refuse it, and the change fails saying so.
func ensureFQ(e Egress) error {
	lk, err := netlink.LinkByName(e.Interface)
	if err != nil {
		return fmt.Errorf("egress interface %s: %w", e.Interface, err)
	}
	q := &netlink.Fq{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: lk.Attrs().Index, Handle: qdiscHandle, Parent: netlink.HANDLE_ROOT}}
	if err := netlink.QdiscReplace(q); err != nil {
		return fmt.Errorf("shaping edt needs the fq qdisc on %s, which this kernel refuses (%v): use shaping htb", e.Interface, err)
	}
	return nil
}
