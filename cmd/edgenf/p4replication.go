package main

import (
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// Clone sessions and multicast groups of a p4 cube, BMv2 style
// (simple_switch_CLI's mirroring_add / mirroring_add_mc and
// mc_mgrp_create / mc_node_create + mc_node_associate). They are the cube's
// clone_sessions and mcast_groups tables.

type replica struct {
	Port uint16 `json:"port"`
	Rid  uint16 `json:"rid"`
}

type mcGroup struct {
	Group    uint32    `json:"group"`
	Replicas []replica `json:"replicas"`
}

type cloneSession struct {
	Session    uint32  `json:"session"`
	Port       *uint16 `json:"port,omitempty"`
	McastGroup uint16  `json:"mcast_group,omitempty"`
	Truncate   uint32  `json:"truncate,omitempty"`
}

func parseNum(what, s string, max uint64) (uint64, error) {
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil || v > max {
		return 0, fmt.Errorf("%s: want a number 0..%d, got %q", what, max, s)
	}
	return v, nil
}

func tablePath(cube, table string) string {
	return "/v1/cubes/" + url.PathEscape(cube) + "/tables/" + table
}

func p4ReplicationCmds() []*cobra.Command {
	var trunc uint32
	session := func(mc bool) *cobra.Command {
		use, short, ex := "mirroring-add CUBE SESSION PORT", "Clone session SESSION sends its copies out of PORT", "  edgenf p4 mirroring-add ps 100 4\n  edgenf p4 mirroring-add ps 100 4 --truncate 64"
		if mc {
			use, short, ex = "mirroring-add-mc CUBE SESSION GROUP", "Clone session SESSION sends its copies to every replica of multicast group GROUP", "  edgenf p4 mirroring-add-mc sw 7 1"
		}
		c := &cobra.Command{
			Use: use, Short: short, Example: ex, Args: cobra.ExactArgs(3), ValidArgsFunction: completeCubes,
			RunE: func(cmd *cobra.Command, args []string) error {
				id, err := parseNum("session", args[1], 1<<32-1)
				if err != nil {
					return err
				}
				s := cloneSession{Session: uint32(id), Truncate: trunc}
				if mc {
					g, err := parseNum("group", args[2], 0xffff)
					if err != nil {
						return err
					}
					s.McastGroup = uint16(g)
				} else {
					p, err := parseNum("port", args[2], 0xffff)
					if err != nil {
						return err
					}
					port := uint16(p)
					s.Port = &port
				}
				if err := api().Do("PUT", tablePath(args[0], "clone_sessions")+"/"+fmt.Sprint(id), s, nil); err != nil {
					return err
				}
				fmt.Printf("clone session %d set\n", id)
				return nil
			},
		}
		c.Flags().Uint32Var(&trunc, "truncate", 0, "cut the copies to this many bytes (0: whole packets)")
		return c
	}
	del := deleteRowCmd("mirroring-delete CUBE SESSION", "Delete a clone session (clones to it make no copy)", "session", "clone_sessions", "clone session")
	dumpS := &cobra.Command{
		Use: "mirroring-dump CUBE", Short: "List clone sessions", Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var ss []cloneSession
			if err := api().Do("GET", tablePath(args[0], "clone_sessions"), nil, &ss); err != nil {
				return err
			}
			sort.Slice(ss, func(i, j int) bool { return ss[i].Session < ss[j].Session })
			return show(os.Stdout, ss, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "SESSION\tPORT\tMCAST_GROUP\tTRUNCATE")
				for _, s := range ss {
					port := "-"
					if s.Port != nil {
						port = fmt.Sprint(*s.Port)
					}
					fmt.Fprintf(tw, "%d\t%s\t%d\t%d\n", s.Session, port, s.McastGroup, s.Truncate)
				}
			})
		},
	}
	create := &cobra.Command{
		Use: "mc-mgrp-create CUBE GROUP", Short: "Create an empty multicast group", Args: cobra.ExactArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseNum("group", args[1], 1<<32-1)
			if err != nil {
				return err
			}
			if err := api().Do("POST", tablePath(args[0], "mcast_groups"), mcGroup{Group: uint32(id), Replicas: []replica{}}, nil); err != nil {
				return err
			}
			fmt.Printf("multicast group %d created\n", id)
			return nil
		},
	}
	destroy := deleteRowCmd("mc-mgrp-destroy CUBE GROUP", "Delete a multicast group", "group", "mcast_groups", "multicast group")
	assoc := &cobra.Command{
		Use:     "mc-node-associate CUBE GROUP RID PORT...",
		Short:   "Add a node to a multicast group: one replica per PORT, with egress_rid RID (BMv2 mc_node_create + mc_node_associate)",
		Example: "  edgenf p4 mc-mgrp-create sw 1\n  edgenf p4 mc-node-associate sw 1 0 1 2 3",
		Args:    cobra.MinimumNArgs(4), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseNum("group", args[1], 1<<32-1)
			if err != nil {
				return err
			}
			rid, err := parseNum("rid", args[2], 0xffff)
			if err != nil {
				return err
			}
			var ports []uint16
			for _, a := range args[3:] {
				p, err := parseNum("port", a, 0xffff)
				if err != nil {
					return err
				}
				ports = append(ports, uint16(p))
			}
			return editGroup(args[0], id, func(g *mcGroup) error {
				for _, p := range ports {
					g.Replicas = append(g.Replicas, replica{Port: p, Rid: uint16(rid)})
				}
				return nil
			})
		},
	}
	dissoc := &cobra.Command{
		Use: "mc-node-dissociate CUBE GROUP RID", Short: "Remove the replicas with egress_rid RID from a multicast group",
		Args: cobra.ExactArgs(3), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseNum("group", args[1], 1<<32-1)
			if err != nil {
				return err
			}
			rid, err := parseNum("rid", args[2], 0xffff)
			if err != nil {
				return err
			}
			return editGroup(args[0], id, func(g *mcGroup) error {
				keep := []replica{}
				for _, r := range g.Replicas {
					if uint64(r.Rid) != rid {
						keep = append(keep, r)
					}
				}
				if len(keep) == len(g.Replicas) {
					return fmt.Errorf("multicast group %d has no replica with rid %d", id, rid)
				}
				g.Replicas = keep
				return nil
			})
		},
	}
	dumpG := &cobra.Command{
		Use: "mc-dump CUBE", Short: "List multicast groups and their (port, rid) replicas", Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var gs []mcGroup
			if err := api().Do("GET", tablePath(args[0], "mcast_groups"), nil, &gs); err != nil {
				return err
			}
			sort.Slice(gs, func(i, j int) bool { return gs[i].Group < gs[j].Group })
			return show(os.Stdout, gs, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "GROUP\tREPLICAS (port/rid)")
				for _, g := range gs {
					reps := make([]string, len(g.Replicas))
					for i, r := range g.Replicas {
						reps[i] = fmt.Sprintf("%d/%d", r.Port, r.Rid)
					}
					fmt.Fprintf(tw, "%d\t%s\n", g.Group, strings.Join(reps, " "))
				}
			})
		},
	}
	return []*cobra.Command{session(false), session(true), del, dumpS, create, destroy, assoc, dissoc, dumpG}
}

// deleteRowCmd is the verb that deletes row ID of a cube's replication table
// (what names the ID in errors, noun the row in the confirmation).
func deleteRowCmd(use, short, what, table, noun string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseNum(what, args[1], 1<<32-1)
			if err != nil {
				return err
			}
			if err := api().Do("DELETE", tablePath(args[0], table)+"/"+fmt.Sprint(id), nil, nil); err != nil {
				return err
			}
			fmt.Printf("%s %d deleted\n", noun, id)
			return nil
		},
	}
}

// editGroup reads multicast group id of a cube, lets edit change its
// replicas and writes it back whole (the daemon replaces a group in one
// step, so its replicas are never half updated).
func editGroup(cube string, id uint64, edit func(*mcGroup) error) error {
	var g mcGroup
	path := tablePath(cube, "mcast_groups") + "/" + fmt.Sprint(id)
	if err := api().Do("GET", path, nil, &g); err != nil {
		return err
	}
	if err := edit(&g); err != nil {
		return err
	}
	if err := api().Do("PUT", path, g, nil); err != nil {
		return err
	}
	fmt.Printf("multicast group %d: %d replicas\n", id, len(g.Replicas))
	return nil
}
