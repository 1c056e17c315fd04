// Package shaping probes which egress mechanisms the kernel offers the
// slicer (docs/nf/slicer.md, "Which mechanism"): sch_fq for Earliest
// Departure Time pacing, sch_htb for classes with guaranteed minimums and
// priorities. The slicer picks by it when its settings name none; `edgenf
// doctor` and `edgenf slice get` show the result.
package shaping

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Mechanisms.
const (
	HTB = "htb"
	EDT = "edt"
)

// Qdiscs is what the kernel lets a root qdisc be, as probed.
type Qdiscs struct {
	FQ  bool `json:"fq"`
	HTB bool `json:"htb"`
	// Err is why the probe could not run (not root, no namespaces); the
	// flags are then false.
	Err string `json:"error,omitempty"`
}

var (
	once   sync.Once
	probed Qdiscs
)

// Probe tries each qdisc once per process, as the root qdisc of the
// loopback of a private network namespace made for it: nothing the machine
// uses is touched, and a kernel that builds a qdisc as a module loads it as
// it would for the real interface.
func Probe() Qdiscs {
	once.Do(func() { probed = probe() })
	return probed
}

func probe() Qdiscs {
	var q Qdiscs
	done := make(chan struct{})
	// A goroutine of its own: its thread changes namespace and, should
	// it fail to come back, is thrown away with it (still locked).
	go func() {
		defer close(done)
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			q.Err = fmt.Sprintf("network namespace: %v", err)
			runtime.UnlockOSThread()
			return
		}
		defer orig.Close()
		ns, err := netns.New()
		if err != nil {
			q.Err = fmt.Sprintf("a private network namespace to probe in: %v", err)
			if netns.Set(orig) == nil {
				runtime.UnlockOSThread()
			}
			return
		}
		q.FQ, q.HTB, err = try()
		if err != nil {
			q.Err = err.Error()
		}
		ns.Close()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
	}()
	<-done
	return q
}

// try adds and removes each root qdisc on this namespace's loopback.
func try() (fq, htb bool, err error) {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return false, false, fmt.Errorf("loopback of the probe namespace: %w", err)
	}
	attrs := netlink.QdiscAttrs{LinkIndex: lo.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}
	add := func(q netlink.Qdisc) bool {
		if netlink.QdiscAdd(q) != nil {
			return false
		}
		netlink.QdiscDel(q)
		return true
	}
	return add(&netlink.Fq{QdiscAttrs: attrs}), add(netlink.NewHtb(attrs)), nil
}

// Pick is the mechanism for slices with (or without) guaranteed minimums
// or priorities, and why: EDT where the kernel has sch_fq and no slice
// needs what only HTB gives, else HTB.
func (q Qdiscs) Pick(needsClasses bool) (mechanism, why string, err error) {
	switch {
	case q.Err != "":
		return "", "", errors.New("cannot probe the kernel's qdiscs: " + q.Err)
	case q.FQ && !needsClasses:
		return EDT, "probed: sch_fq present, no slice has a guaranteed minimum or a priority", nil
	case q.HTB && needsClasses:
		return HTB, "probed: sch_htb present; slices with guaranteed minimums or priorities need it", nil
	case q.HTB:
		return HTB, "probed: sch_fq absent, sch_htb present", nil
	case needsClasses && q.FQ:
		return "", "", errors.New("slices with guaranteed minimums or priorities need sch_htb, which this kernel lacks (it has sch_fq: drop min_bps and priority for edt)")
	}
	return "", "", errors.New("the kernel has neither sch_fq nor sch_htb: no egress shaping")
}

// String says what the probe found, for doctor.
func (q Qdiscs) String() string {
	if q.Err != "" {
		return "not probed: " + q.Err
	}
	have := func(b bool) string {
		if b {
			return "present"
		}
		return "absent"
	}
	return fmt.Sprintf("sch_fq %s, sch_htb %s", have(q.FQ), have(q.HTB))
}
