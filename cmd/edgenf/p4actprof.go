package main

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/spf13/cobra"
)

// Action profiles and selectors of a p4 cube, BMv2 style
// (simple_switch_CLI's act_prof_* and table_indirect_* verbs): members and
// groups are the cube's ap_members and ap_groups tables; an entry of a
// table implemented by a profile names a member or a group.

type apMember struct {
	Profile string            `json:"profile"`
	Member  uint32            `json:"member"`
	Action  string            `json:"action"`
	Params  map[string]string `json:"params,omitempty"`
}

type apGroup struct {
	Profile string   `json:"profile"`
	Group   uint32   `json:"group"`
	Members []uint32 `json:"members"`
}

// cubeProfile is the P4 program of a cube and its action profile named
// name (in full, by alias or by its last components).
func cubeProfile(cube, name string) (*p4info.P4Info, *p4info.ActionProfile, error) {
	info, err := p4Model(cube)
	if err != nil {
		return nil, nil, err
	}
	p, err := findProfile(info, name)
	return info, p, err
}

func findProfile(info *p4info.P4Info, name string) (*p4info.ActionProfile, error) {
	var names []string
	for _, p := range info.ActionProfiles {
		if p.Preamble.Name == name || p.Preamble.Alias == name || strings.HasSuffix(p.Preamble.Name, "."+name) {
			return p, nil
		}
		names = append(names, p.Preamble.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no action profile %q: the program has none", name)
	}
	return nil, fmt.Errorf("no action profile %q (profiles: %s)", name, strings.Join(names, ", "))
}

func apPath(cube, table, profile string, id uint32) string {
	return tablePath(cube, table) + "/" + url.PathEscape(profile+" "+strconv.FormatUint(uint64(id), 10))
}

// freeID is the lowest id no row of a cube's ap_members or ap_groups table
// of profile has (BMv2 hands out handles the same way).
func freeID(cube, table, profile string) (uint32, error) {
	var rows []struct {
		Profile string `json:"profile"`
		Member  uint32 `json:"member"`
		Group   uint32 `json:"group"`
	}
	if err := api().Do("GET", tablePath(cube, table), nil, &rows); err != nil {
		return 0, err
	}
	used := map[uint32]bool{}
	for _, r := range rows {
		if r.Profile == profile {
			used[r.Member+r.Group] = true
		}
	}
	id := uint32(0)
	for used[id] {
		id++
	}
	return id, nil
}

// memberBody resolves CUBE PROFILE ACTION [PARAM...] into a member.
func memberBody(args []string, id *uint32) (*apMember, error) {
	info, p, err := cubeProfile(args[0], args[1])
	if err != nil {
		return nil, err
	}
	a, err := findAction(info, args[2])
	if err != nil {
		return nil, err
	}
	rest := args[3:]
	if id == nil {
		if len(rest) == 0 {
			return nil, fmt.Errorf("want CUBE PROFILE ACTION MEMBER [PARAM...]")
		}
		v, err := parseNum("member", rest[0], 1<<32-1)
		if err != nil {
			return nil, err
		}
		m := uint32(v)
		id, rest = &m, rest[1:]
	}
	pm, err := paramMap(a, rest)
	if err != nil {
		return nil, err
	}
	return &apMember{Profile: p.Preamble.Name, Member: *id, Action: a.Preamble.Name, Params: pm}, nil
}

func p4ActProfCmds() []*cobra.Command {
	var newID int64
	createMember := &cobra.Command{
		Use: "act-prof-create-member CUBE PROFILE ACTION [PARAM...]", Aliases: []string{"act_prof_create_member"},
		Short:   "Create a member of an action profile or selector: an action with its parameters; prints its handle",
		Example: "  edgenf p4 act-prof-create-member r1 next_hops forward 0xf1 0xa1 1",
		Args:    cobra.MinimumNArgs(3), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, p, err := cubeProfile(args[0], args[1])
			if err != nil {
				return err
			}
			id := uint32(newID)
			if newID < 0 {
				if id, err = freeID(args[0], "ap_members", p.Preamble.Name); err != nil {
					return err
				}
			}
			m, err := memberBody(args, &id)
			if err != nil {
				return err
			}
			if err := api().Do("POST", tablePath(args[0], "ap_members"), m, nil); err != nil {
				return err
			}
			fmt.Printf("member %d of %s created (%s)\n", id, m.Profile, m.Action)
			return nil
		},
	}
	createMember.Flags().Int64Var(&newID, "id", -1, "the member's id (default: the lowest free one)")
	modifyMember := &cobra.Command{
		Use: "act-prof-modify-member CUBE PROFILE ACTION MEMBER [PARAM...]", Aliases: []string{"act_prof_modify_member"},
		Short: "Change a member's action and parameters: every entry and group naming it follows",
		Args:  cobra.MinimumNArgs(4), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := memberBody(args, nil)
			if err != nil {
				return err
			}
			path := apPath(args[0], "ap_members", m.Profile, m.Member)
			if err := api().Do("GET", path, nil, &apMember{}); err != nil {
				return err
			}
			if err := api().Do("PUT", path, m, nil); err != nil {
				return err
			}
			fmt.Printf("member %d of %s modified (%s)\n", m.Member, m.Profile, m.Action)
			return nil
		},
	}
	deleteRef := func(use, alias, short, table, noun string) *cobra.Command {
		return &cobra.Command{
			Use: use, Aliases: []string{alias}, Short: short, Args: cobra.ExactArgs(3), ValidArgsFunction: completeCubes,
			RunE: func(cmd *cobra.Command, args []string) error {
				_, p, err := cubeProfile(args[0], args[1])
				if err != nil {
					return err
				}
				id, err := parseNum(noun, args[2], 1<<32-1)
				if err != nil {
					return err
				}
				if err := api().Do("DELETE", apPath(args[0], table, p.Preamble.Name, uint32(id)), nil, nil); err != nil {
					return err
				}
				fmt.Printf("%s %d of %s deleted\n", noun, id, p.Preamble.Name)
				return nil
			},
		}
	}
	deleteMember := deleteRef("act-prof-delete-member CUBE PROFILE MEMBER", "act_prof_delete_member", "Delete a member no entry or group names", "ap_members", "member")
	createGroup := &cobra.Command{
		Use: "act-prof-create-group CUBE PROFILE", Aliases: []string{"act_prof_create_group"},
		Short: "Create an empty group of an action selector; prints its handle",
		Args:  cobra.ExactArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, p, err := cubeProfile(args[0], args[1])
			if err != nil {
				return err
			}
			id := uint32(newID)
			if newID < 0 {
				if id, err = freeID(args[0], "ap_groups", p.Preamble.Name); err != nil {
					return err
				}
			}
			if err := api().Do("POST", tablePath(args[0], "ap_groups"), apGroup{Profile: p.Preamble.Name, Group: id, Members: []uint32{}}, nil); err != nil {
				return err
			}
			fmt.Printf("group %d of %s created\n", id, p.Preamble.Name)
			return nil
		},
	}
	createGroup.Flags().Int64Var(&newID, "id", -1, "the group's id (default: the lowest free one)")
	deleteGroup := deleteRef("act-prof-delete-group CUBE PROFILE GROUP", "act_prof_delete_group", "Delete a group no entry names", "ap_groups", "group")
	editGroupCmd := func(add bool) *cobra.Command {
		use, alias, short := "act-prof-add-member-to-group CUBE PROFILE MEMBER GROUP", "act_prof_add_member_to_group", "Add a member to a group"
		if !add {
			use, alias, short = "act-prof-remove-member-from-group CUBE PROFILE MEMBER GROUP", "act_prof_remove_member_from_group", "Remove a member from a group"
		}
		return &cobra.Command{
			Use: use, Aliases: []string{alias}, Short: short, Args: cobra.ExactArgs(4), ValidArgsFunction: completeCubes,
			RunE: func(cmd *cobra.Command, args []string) error {
				_, p, err := cubeProfile(args[0], args[1])
				if err != nil {
					return err
				}
				mid, err := parseNum("member", args[2], 1<<32-1)
				if err != nil {
					return err
				}
				gid, err := parseNum("group", args[3], 1<<32-1)
				if err != nil {
					return err
				}
				// the group is replaced whole: the data path never sees half a change
				path := apPath(args[0], "ap_groups", p.Preamble.Name, uint32(gid))
				var g apGroup
				if err := api().Do("GET", path, nil, &g); err != nil {
					return err
				}
				i := slices.Index(g.Members, uint32(mid))
				switch {
				case add && i >= 0:
					return fmt.Errorf("member %d is already in group %d", mid, gid)
				case add:
					g.Members = append(g.Members, uint32(mid))
				case i < 0:
					return fmt.Errorf("member %d is not in group %d", mid, gid)
				default:
					g.Members = slices.Delete(g.Members, i, i+1)
				}
				if err := api().Do("PUT", path, g, nil); err != nil {
					return err
				}
				fmt.Printf("group %d of %s: %d members\n", gid, p.Preamble.Name, len(g.Members))
				return nil
			},
		}
	}
	dump := &cobra.Command{
		Use: "act-prof-dump CUBE [PROFILE]", Aliases: []string{"act_prof_dump"}, Short: "List the members and groups of a cube's action profiles (of one)",
		Args: cobra.RangeArgs(1, 2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var ms []apMember
			var gs []apGroup
			if err := api().Do("GET", tablePath(args[0], "ap_members"), nil, &ms); err != nil {
				return err
			}
			if err := api().Do("GET", tablePath(args[0], "ap_groups"), nil, &gs); err != nil {
				return err
			}
			if len(args) == 2 {
				_, p, err := cubeProfile(args[0], args[1])
				if err != nil {
					return err
				}
				ms = slices.DeleteFunc(ms, func(m apMember) bool { return m.Profile != p.Preamble.Name })
				gs = slices.DeleteFunc(gs, func(g apGroup) bool { return g.Profile != p.Preamble.Name })
			}
			sort.Slice(ms, func(i, j int) bool {
				return ms[i].Profile < ms[j].Profile || ms[i].Profile == ms[j].Profile && ms[i].Member < ms[j].Member
			})
			sort.Slice(gs, func(i, j int) bool {
				return gs[i].Profile < gs[j].Profile || gs[i].Profile == gs[j].Profile && gs[i].Group < gs[j].Group
			})
			v := map[string]any{"members": ms, "groups": gs}
			return show(os.Stdout, v, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "PROFILE\tKIND\tID\tACTION / MEMBERS\tPARAMS")
				for _, m := range ms {
					fmt.Fprintf(tw, "%s\tmember\t%d\t%s\t%s\n", m.Profile, m.Member, m.Action, kv(m.Params))
				}
				for _, g := range gs {
					ids := make([]string, len(g.Members))
					for i, m := range g.Members {
						ids[i] = fmt.Sprint(m)
					}
					fmt.Fprintf(tw, "%s\tgroup\t%d\t%s\t\n", g.Profile, g.Group, strings.Join(ids, " "))
				}
			})
		},
	}
	indirectAdd := func(group bool) *cobra.Command {
		use, alias, short, ex := "table-indirect-add CUBE TABLE MATCH... => MEMBER [PRIORITY]", "table_indirect_add", "Add an entry pointing to a member of the table's action profile",
			"  edgenf p4 table-indirect-add r1 routes 198.20.0.0/16 '=>' 3"
		if group {
			use, alias, short, ex = "table-indirect-add-with-group CUBE TABLE MATCH... => GROUP [PRIORITY]", "table_indirect_add_with_group", "Add an entry pointing to a group of the table's action selector",
				"  edgenf p4 table-indirect-add-with-group r1 routes 198.19.0.0/16 '=>' 10"
		}
		return &cobra.Command{
			Use: use, Aliases: []string{alias}, Short: short, Example: ex, Args: cobra.MinimumNArgs(4), ValidArgsFunction: completeCubes,
			RunE: func(cmd *cobra.Command, args []string) error {
				_, t, err := modelTable(args[0], args[1])
				if err != nil {
					return err
				}
				rest := args[2:]
				if err := shellSplit(rest); err != nil {
					return err
				}
				i := indexOf(rest, "=>")
				if i < 0 || i+1 >= len(rest) {
					return fmt.Errorf("want TABLE MATCH... => ID [PRIORITY]")
				}
				m, err := matchMap(t, rest[:i])
				if err != nil {
					return err
				}
				ids := rest[i+1:]
				e := map[string]any{"table": t.Preamble.Name}
				if len(m) > 0 {
					e["match"] = m
				}
				if needsPriority(t) {
					if len(ids) != 2 {
						return fmt.Errorf("table %s has ternary/range/optional keys: give a priority after the id", t.Preamble.Name)
					}
					prio, err := parseNum("priority", ids[1], 1<<32-1)
					if err != nil {
						return err
					}
					e["priority"] = prio
				} else if len(ids) != 1 {
					return fmt.Errorf("want one id after =>, got %d values", len(ids))
				}
				noun := map[bool]string{false: "member", true: "group"}[group]
				id, err := parseNum(noun, ids[0], 1<<32-1)
				if err != nil {
					return err
				}
				e[noun] = id
				if err := api().Do("POST", tablePath(args[0], "entries"), e, nil); err != nil {
					return err
				}
				fmt.Printf("entry added: %s -> %s %d\n", entryKey(e), noun, id)
				return nil
			},
		}
	}
	indirectDefault := func(group bool) *cobra.Command {
		use, alias, noun := "table-indirect-set-default CUBE TABLE MEMBER", "table_indirect_set_default", "member"
		if group {
			use, alias, noun = "table-indirect-set-default-with-group CUBE TABLE GROUP", "table_indirect_set_default_with_group", "group"
		}
		return &cobra.Command{
			Use: use, Aliases: []string{alias}, Short: "Make a " + noun + " of the table's action profile its default action",
			Args: cobra.ExactArgs(3), ValidArgsFunction: completeCubes,
			RunE: func(cmd *cobra.Command, args []string) error {
				_, t, err := modelTable(args[0], args[1])
				if err != nil {
					return err
				}
				id, err := parseNum(noun, args[2], 1<<32-1)
				if err != nil {
					return err
				}
				d := map[string]any{"table": t.Preamble.Name, noun: id}
				return api().Do("PUT", tablePath(args[0], "defaults")+"/"+url.PathEscape(t.Preamble.Name), d, nil)
			},
		}
	}
	return []*cobra.Command{createMember, modifyMember, deleteMember, createGroup, deleteGroup, editGroupCmd(true), editGroupCmd(false), dump,
		indirectAdd(false), indirectAdd(true), indirectDefault(false), indirectDefault(true)}
}
