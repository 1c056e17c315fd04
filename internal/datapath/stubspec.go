package datapath

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
)

// stubProgram is the program of the stub object that goes on interfaces.
const stubProgram = "edgenf_stub"

// stubSpecs holds the stub objects parsed, by hook (parseStubSpec).
var stubSpecs struct {
	sync.Mutex
	byHook map[Hook]*ebpf.CollectionSpec
}

// stubSpec is what AttachStub loads for an interface: the stub object of
// hook reduced to the stub program and the maps it uses, parsed once (the
// object is embedded) and copied for each caller. The object's other
// programs have loaders of their own (the injector, the copy machine, the
// XDP pass-through); loaded with every stub, they put each new interface
// through the verifier three times, the copy machine alone costing half
// of a TC peering.
func stubSpec(hook Hook) (*ebpf.CollectionSpec, error) {
	stubSpecs.Lock()
	defer stubSpecs.Unlock()
	if s := stubSpecs.byHook[hook]; s != nil {
		return s.Copy(), nil
	}
	s, err := parseStubSpec(hook)
	if err != nil {
		return nil, err
	}
	if stubSpecs.byHook == nil {
		stubSpecs.byHook = map[Hook]*ebpf.CollectionSpec{}
	}
	stubSpecs.byHook[hook] = s
	return s.Copy(), nil
}

func parseStubSpec(hook Hook) (*ebpf.CollectionSpec, error) {
	obj := stubXDP
	if hook == TC {
		obj = stubTC
	}
	spec, err := LoadSpec(obj)
	if err != nil {
		return nil, err
	}
	if spec.Programs[stubProgram] == nil {
		return nil, fmt.Errorf("%s stub object has no program %s", hook, stubProgram)
	}
	for n := range spec.Programs {
		if n != stubProgram {
			delete(spec.Programs, n)
		}
	}
	used := map[string]bool{}
	for _, ins := range spec.Programs[stubProgram].Instructions {
		if r := ins.Reference(); r != "" {
			used[r] = true
		}
	}
	for _, n := range ifaceMapNames {
		if !used[n] {
			return nil, fmt.Errorf("%s stub program does not use map %s", hook, n)
		}
	}
	for n := range spec.Maps {
		if !used[n] && !isSection(n) {
			delete(spec.Maps, n)
		}
	}
	return spec, nil
}
