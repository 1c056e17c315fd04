package datapath

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// metaProg is an XDP program that passes every frame; with meta it first
// puts a copy-machine meta naming slot 5 with a sequence that slot never
// had, as a frame whose slot was overwritten would carry.
func metaProg(t *testing.T, meta bool) *ebpf.Program {
	t.Helper()
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	if meta {
		insns = append(insns,
			asm.Mov.Imm(asm.R2, -16),
			asm.FnXdpAdjustMeta.Call(),
			asm.JNE.Imm(asm.R0, 0, "pass"),
			asm.LoadMem(asm.R2, asm.R6, 8, asm.Word), // data_meta
			asm.LoadMem(asm.R3, asm.R6, 0, asm.Word), // data
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 16),
			asm.JGT.Reg(asm.R4, asm.R3, "pass"),
			asm.StoreImm(asm.R2, 0, 0x636f7079, asm.Word), // EDGENF_COPY_MAGIC
			asm.StoreImm(asm.R2, 4, 5, asm.Word),          // slot
			asm.StoreImm(asm.R2, 8, 0x7fffffff, asm.Word), // seq
			asm.StoreImm(asm.R2, 12, 0, asm.Word),         // cpu
		)
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, XDPPass).WithSymbol("pass"), asm.Return())
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, Instructions: insns, License: "GPL"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// The copy machine at TCX ingress leaves frames without its meta to the
// Linux stack untouched; a frame whose slot does not hold its sequence any
// more (overwritten) is dropped and counted.
func TestCopierPassesOthersAndDropsStaleSlots(t *testing.T) {
	testenv.NeedRoot(t)
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfc-%d", os.Getpid()))
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Destroy() })
	lab := netlab.NewT(t)
	a, err := lab.Host("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := lab.Host("b")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Link(a, "eth0", b, "eth0", []string{"198.18.0.1/24"}, []string{"198.18.0.2/24"}); err != nil {
		t.Fatal(err)
	}
	ma, _ := a.MAC("eth0")
	mb, _ := b.MAC("eth0")
	if err := a.SetNeigh("eth0", "198.18.0.2", mb.String()); err != nil {
		t.Fatal(err)
	}
	if err := b.SetNeigh("eth0", "198.18.0.1", ma.String()); err != nil {
		t.Fatal(err)
	}
	ifindex, err := b.IfIndex("eth0")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "ifaces", "copier-test")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var xl link.Link
	if err := b.Do(func() error {
		if err := d.attachCopier(dir, ifindex); err != nil {
			return err
		}
		var err error
		xl, err = link.AttachXDP(link.XDPOptions{Program: metaProg(t, false), Interface: ifindex})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { xl.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Ping(ctx, "198.18.0.2", 3); err != nil {
		t.Fatalf("frames without the copy meta: %v", err)
	}
	if err := xl.Update(metaProg(t, true)); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if err := a.Ping(pctx, "198.18.0.2", 1); err == nil {
		t.Fatal("a frame naming an overwritten slot reached the stack")
	}
	st, err := d.CopyStats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Stale == 0 || st.Failed != 0 {
		t.Fatalf("copy machine counters %+v, want the stale frames counted", st)
	}
	// back to frames without meta: they pass again
	if err := xl.Update(metaProg(t, false)); err != nil {
		t.Fatal(err)
	}
	if err := a.Ping(ctx, "198.18.0.2", 2); err != nil {
		t.Fatalf("after the stale frames: %v", err)
	}
	d.detachCopier(dir)
}
