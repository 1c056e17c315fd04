package shaping

import (
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"
)

func TestPick(t *testing.T) {
	for _, tc := range []struct {
		q       Qdiscs
		classes bool
		want    string // mechanism, or "error: ..." text
	}{
		{Qdiscs{FQ: true, HTB: true}, false, EDT},
		{Qdiscs{FQ: true, HTB: true}, true, HTB},
		{Qdiscs{FQ: false, HTB: true}, false, HTB},
		{Qdiscs{FQ: true, HTB: false}, false, EDT},
		{Qdiscs{FQ: true, HTB: false}, true, "error: slices with guaranteed minimums"},
		{Qdiscs{}, false, "error: the kernel has neither"},
		{Qdiscs{Err: "not root"}, false, "error: cannot probe"},
	} {
		m, why, err := tc.q.Pick(tc.classes)
		got := m
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, tc.want) || (err == nil && why == "") {
			t.Errorf("%+v classes %v: %q (%s), want %s", tc.q, tc.classes, got, why, tc.want)
		}
	}
}

// The probe finds what a real interface of this machine accepts as its
// root qdisc, and leaves nothing behind.
func TestProbeAgreesWithARealInterface(t *testing.T) {
	testenv.NeedRoot(t)
	q := Probe()
	if q.Err != "" {
		t.Fatal(q.Err)
	}
	lab := netlab.NewT(t)
	a, _, err := lab.RootVeth("sp", "spp")
	if err != nil {
		t.Fatal(err)
	}
	lk, err := netlink.LinkByName(a)
	if err != nil {
		t.Fatal(err)
	}
	attrs := netlink.QdiscAttrs{LinkIndex: lk.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}
	accepts := func(qd netlink.Qdisc) bool {
		err := netlink.QdiscReplace(qd)
		return err == nil
	}
	if fq := accepts(&netlink.Fq{QdiscAttrs: attrs}); fq != q.FQ {
		t.Errorf("probe says fq %v, a veth says %v", q.FQ, fq)
	}
	if htb := accepts(netlink.NewHtb(attrs)); htb != q.HTB {
		t.Errorf("probe says htb %v, a veth says %v", q.HTB, htb)
	}
}
