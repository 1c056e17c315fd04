package datapath

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
)

// What the kernel must have for an eBPF object to load, and since which
// Linux version: the program types, map types and helpers the object uses
// (read from the object itself), each probed with cilium/ebpf's features
// package rather than guessed from the version. The versions are those that
// brought each feature upstream (bcc's docs/kernel-versions.md); enterprise
// kernels backport some, which the probes see.

// Version is a Linux version, major.minor.
type Version struct{ Major, Minor int }

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Less orders versions.
func (v Version) Less(w Version) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

// Requirement is one thing an object needs from the kernel.
type Requirement struct {
	Kind  string // "program type", "map type", "helper", "helper argument"
	Name  string
	Since Version
	probe func() error
}

func (r Requirement) String() string { return fmt.Sprintf("%s %s (Linux %s)", r.Kind, r.Name, r.Since) }

// Probe reports (nil) whether this kernel has it. Probing loads a tiny
// program or creates a tiny map: it needs root, and changes nothing.
func (r Requirement) Probe() error {
	v, _ := probes.LoadOrStore(r.Kind+" "+r.Name, &probeResult{})
	p := v.(*probeResult)
	p.once.Do(func() { p.err = r.probe() })
	return p.err
}

type probeResult struct {
	once sync.Once
	err  error
}

var probes sync.Map

var progTypeSince = map[ebpf.ProgramType]Version{
	ebpf.SchedCLS: {4, 1},
	ebpf.XDP:      {4, 8},
}

var mapTypeSince = map[ebpf.MapType]Version{
	ebpf.Hash:           {3, 19},
	ebpf.Array:          {3, 19},
	ebpf.ProgramArray:   {4, 2},
	ebpf.PerfEventArray: {4, 3},
	ebpf.PerCPUHash:     {4, 6},
	ebpf.PerCPUArray:    {4, 6},
	ebpf.LRUHash:        {4, 10},
	ebpf.LRUCPUHash:     {4, 10},
	ebpf.LPMTrie:        {4, 11},
	ebpf.ArrayOfMaps:    {4, 12},
	ebpf.HashOfMaps:     {4, 12},
	ebpf.DevMap:         {4, 14},
	ebpf.DevMapHash:     {5, 4},
	ebpf.RingBuf:        {5, 8},
}

var helperSince = map[asm.BuiltinFunc]Version{
	asm.FnMapLookupElem:       {3, 19},
	asm.FnMapUpdateElem:       {3, 19},
	asm.FnMapDeleteElem:       {3, 19},
	asm.FnKtimeGetNs:          {4, 1},
	asm.FnGetPrandomU32:       {4, 1},
	asm.FnGetSmpProcessorId:   {4, 1},
	asm.FnSkbStoreBytes:       {4, 1},
	asm.FnL3CsumReplace:       {4, 1},
	asm.FnL4CsumReplace:       {4, 1},
	asm.FnTailCall:            {4, 2},
	asm.FnCloneRedirect:       {4, 2},
	asm.FnTracePrintk:         {4, 1},
	asm.FnSkbVlanPush:         {4, 3},
	asm.FnSkbVlanPop:          {4, 3},
	asm.FnRedirect:            {4, 4},
	asm.FnPerfEventOutput:     {4, 4},
	asm.FnSkbLoadBytes:        {4, 5},
	asm.FnCsumDiff:            {4, 6},
	asm.FnSkbChangeProto:      {4, 8},
	asm.FnSkbChangeTail:       {4, 9},
	asm.FnSkbPullData:         {4, 9},
	asm.FnSkbChangeHead:       {4, 10},
	asm.FnXdpAdjustHead:       {4, 10},
	asm.FnSkbAdjustRoom:       {4, 13},
	asm.FnRedirectMap:         {4, 14},
	asm.FnXdpAdjustMeta:       {4, 15},
	asm.FnXdpAdjustTail:       {4, 18},
	asm.FnRingbufOutput:       {5, 8},
	asm.FnRingbufQuery:        {5, 8},
	asm.FnKtimeGetCoarseNs:    {5, 11},
	asm.FnLoop:                {5, 17},
	asm.FnXdpLoadBytes:        {5, 18},
	asm.FnXdpStoreBytes:       {5, 18},
	asm.FnSkbSetTstamp:        {5, 18},
	asm.FnMapLookupPercpuElem: {5, 19},
}

// Requirements lists what spec needs from the kernel, newest first. An
// error names a program type, map type or helper this file has no version
// for (a test keeps the built-in NFs and the P4 examples covered).
func Requirements(spec *ebpf.CollectionSpec) ([]Requirement, error) {
	seen := map[string]bool{}
	var out []Requirement
	var unknown []string
	add := func(r Requirement, ok bool) {
		if seen[r.Kind+r.Name] {
			return
		}
		seen[r.Kind+r.Name] = true
		if !ok {
			unknown = append(unknown, r.Kind+" "+r.Name)
			return
		}
		out = append(out, r)
	}
	for _, ps := range spec.Programs {
		pt := ps.Type
		v, ok := progTypeSince[pt]
		add(Requirement{Kind: "program type", Name: pt.String(), Since: v,
			probe: func() error { return features.HaveProgramType(pt) }}, ok)
		for i, ins := range ps.Instructions {
			if !ins.IsBuiltinCall() {
				continue
			}
			fn := asm.BuiltinFunc(ins.Constant)
			v, ok := helperSince[fn]
			add(Requirement{Kind: "helper", Name: helperName(fn), Since: v,
				probe: func() error { return features.HaveProgramHelper(pt, fn) }}, ok)
			more, unk := argRequirements(ps.Instructions, i)
			for _, r := range more {
				add(r, true)
			}
			for _, u := range unk {
				add(Requirement{Kind: "helper argument", Name: u}, false)
			}
		}
	}
	for _, ms := range spec.Maps {
		mt := ms.Type
		if ms.Name != "" && ms.Name[0] == '.' { // .rodata, .data: global data
			continue
		}
		v, ok := mapTypeSince[mt]
		add(Requirement{Kind: "map type", Name: mt.String(), Since: v,
			probe: func() error { return features.HaveMapType(mt) }}, ok)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Since != out[j].Since {
			return out[j].Since.Less(out[i].Since)
		}
		return out[i].Kind+out[i].Name < out[j].Kind+out[j].Name
	})
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return out, fmt.Errorf("no kernel version known for %s (internal/datapath/kernel.go)", strings.Join(unknown, ", "))
	}
	return out, nil
}

// helperName is the helper's C name: FnMapLookupElem → bpf_map_lookup_elem.
func helperName(fn asm.BuiltinFunc) string {
	s := strings.TrimPrefix(fn.String(), "Fn")
	var b strings.Builder
	b.WriteString("bpf")
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		} else if i == 0 {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Missing probes spec's requirements and returns those this kernel lacks,
// newest first. Probes that cannot run (no privilege) count as present.
func Missing(spec *ebpf.CollectionSpec) []Requirement {
	reqs, _ := Requirements(spec)
	var out []Requirement
	for _, r := range reqs {
		if err := r.Probe(); errors.Is(err, ebpf.ErrNotSupported) {
			out = append(out, r)
		}
	}
	return out
}

// KernelTooOld is the error for an object this kernel cannot load.
type KernelTooOld struct {
	Need    Version
	Missing []Requirement
}

func (e *KernelTooOld) Error() string {
	names := make([]string, len(e.Missing))
	for i, r := range e.Missing {
		names[i] = r.Kind + " " + r.Name
	}
	return fmt.Sprintf("needs Linux %s or newer (this kernel is %s, without %s)", e.Need, KernelRelease(), strings.Join(names, ", "))
}

// explainLoadError turns a failed load of spec into KernelTooOld when the
// kernel lacks something spec uses: a clear line instead of a verifier log.
func explainLoadError(spec *ebpf.CollectionSpec, err error) error {
	miss := Missing(spec)
	if len(miss) == 0 {
		return err
	}
	return &KernelTooOld{Need: miss[0].Since, Missing: miss}
}

// FrameworkObjects are the objects every chain loads (the stubs, the copy
// machine, the injector), for checking what the kernel must have.
func FrameworkObjects() [][]byte { return [][]byte{stubXDP, stubTC} }

// CheckKernel fails with KernelTooOld when the kernel lacks something every
// chain needs: edgenfd checks at start, for one clear line instead of a
// failed load later. It probes (about 30 tiny programs and maps, once per
// process).
func CheckKernel() error {
	for _, obj := range FrameworkObjects() {
		spec, err := LoadSpec(obj)
		if err != nil {
			return err
		}
		if miss := Missing(spec); len(miss) > 0 {
			return &KernelTooOld{Need: miss[0].Since, Missing: miss}
		}
	}
	return nil
}
