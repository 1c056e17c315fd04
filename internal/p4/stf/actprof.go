package stf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// Action profiles and selectors in STF files, in the words of BMv2's
// simple_switch_CLI (STF has none of its own):
//
//	act_prof_create_member <profile> <member> <action>(param:value, ...)
//	act_prof_modify_member <profile> <member> <action>(param:value, ...)
//	act_prof_delete_member <profile> <member>
//	act_prof_create_group <profile> <group> [<member> ...]
//	act_prof_delete_group <profile> <group>
//	act_prof_add_member_to_group <profile> <member> <group>
//	act_prof_remove_member_from_group <profile> <member> <group>
//	add <table> [priority] <field:value> ... member(<member>) | group(<group>)
//	setdefault <table> member(<member>) | group(<group>)

func parseActProf(c *Cmd, line string, f []string) error {
	if len(f) < 3 {
		return fmt.Errorf("%s <profile> <id> ...", c.Kind)
	}
	c.Profile = f[1]
	id, err := strconv.ParseUint(f[2], 0, 32)
	if err != nil {
		return fmt.Errorf("%s: bad id %q", c.Kind, f[2])
	}
	c.Nums = []uint64{id}
	switch c.Kind {
	case "act_prof_create_member", "act_prof_modify_member":
		// the action may contain spaces: take the text after the id
		rest := strings.TrimSpace(line[strings.Index(line, f[2])+len(f[2]):])
		a, err := parseLine("setdefault " + c.Profile + " " + rest)
		if err != nil {
			return fmt.Errorf("%s: %v", c.Kind, err)
		}
		c.Action, c.Args = a.Action, a.Args
		return nil
	case "act_prof_delete_member", "act_prof_delete_group":
		if len(f) != 3 {
			return fmt.Errorf("%s <profile> <id>", c.Kind)
		}
		return nil
	case "act_prof_add_member_to_group", "act_prof_remove_member_from_group":
		if len(f) != 4 {
			return fmt.Errorf("%s <profile> <member> <group>", c.Kind)
		}
	}
	for _, a := range f[3:] {
		v, err := strconv.ParseUint(a, 0, 32)
		if err != nil {
			return fmt.Errorf("%s: bad id %q", c.Kind, a)
		}
		c.Nums = append(c.Nums, v)
	}
	return nil
}

func (r *Runner) actProfCmd(c *Cmd) error { return ActProf(r.RT, c) }

// ActProf applies an act_prof_* command to a loaded program.
func ActProf(rt *tableruntime.Program, c *Cmd) error {
	id := uint32(c.Nums[0])
	switch c.Kind {
	case "act_prof_create_member", "act_prof_modify_member":
		return rt.SetMember(c.Profile, id, c.Action, c.Args)
	case "act_prof_delete_member":
		return rt.DeleteMember(c.Profile, id)
	case "act_prof_create_group":
		var ms []uint32
		for _, m := range c.Nums[1:] {
			ms = append(ms, uint32(m))
		}
		return rt.SetGroup(c.Profile, id, ms)
	case "act_prof_delete_group":
		return rt.DeleteGroup(c.Profile, id)
	}
	// add/remove member id to/from group Nums[1]
	gid := uint32(c.Nums[1])
	groups, err := rt.Groups(c.Profile)
	if err != nil {
		return err
	}
	ms, ok := groups[gid]
	if !ok {
		return fmt.Errorf("action profile %s has no group %d", c.Profile, gid)
	}
	i := slices.Index(ms, id)
	if c.Kind == "act_prof_add_member_to_group" {
		if i >= 0 {
			return nil
		}
		ms = append(ms, id)
	} else {
		if i < 0 {
			return fmt.Errorf("member %d is not in group %d", id, gid)
		}
		ms = slices.Delete(ms, i, i+1)
	}
	return rt.SetGroup(c.Profile, gid, ms)
}

// refOf is the member or group an add or setdefault names.
func refOf(c *Cmd) (p4info.Ref, bool, error) {
	if c.Action != "member" && c.Action != "group" {
		return p4info.Ref{}, false, nil
	}
	if len(c.Args) != 1 {
		return p4info.Ref{}, true, fmt.Errorf("%s(<id>) takes one id", c.Action)
	}
	id, err := strconv.ParseUint(c.Args[0].Value, 0, 32)
	if err != nil {
		return p4info.Ref{}, true, fmt.Errorf("%s: bad id %q", c.Action, c.Args[0].Value)
	}
	return p4info.Ref{Group: c.Action == "group", ID: uint32(id)}, true, nil
}

func (r *Runner) addEntry(c *Cmd, prio uint32) error { return AddEntry(r.RT, c, prio) }

func (r *Runner) setDefault(c *Cmd) error { return SetDefault(r.RT, c) }

// AddEntry applies an add command (an action, a member or a group).
func AddEntry(rt *tableruntime.Program, c *Cmd, prio uint32) error {
	ref, ok, err := refOf(c)
	if err != nil {
		return err
	}
	if ok {
		return rt.AddRefEntry(c.Table, c.Matches, ref, prio)
	}
	return rt.AddEntry(c.Table, c.Matches, c.Action, c.Args, prio)
}

// SetDefault applies a setdefault command (an action, a member or a group).
func SetDefault(rt *tableruntime.Program, c *Cmd) error {
	ref, ok, err := refOf(c)
	if err != nil {
		return err
	}
	if ok {
		return rt.SetDefaultRef(c.Table, ref)
	}
	return rt.SetDefault(c.Table, c.Action, c.Args)
}
