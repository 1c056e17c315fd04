package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/edgenf/edgenf/internal/nf/slicer/rate"
	"github.com/spf13/cobra"
)

// Slices are entries of a slicer cube's "slices" table (REST:
// /v1/nf/slicer/CUBE/tables/slices); this command names them by slice and
// reads their counters from the cube's "status" view.

type sliceStatus struct {
	Name          string `json:"name"`
	ID            int    `json:"id"`
	Tenant        string `json:"tenant"`
	Port          string `json:"port"`
	Chain         string `json:"chain"`
	Priority      int    `json:"priority"`
	Class         string `json:"class"`
	InPackets     uint64 `json:"in_packets"`
	InBytes       uint64 `json:"in_bytes"`
	ReturnPackets uint64 `json:"return_packets"`
	ReturnBytes   uint64 `json:"return_bytes"`
	PolicePackets uint64 `json:"police_drop_packets"`
	Egress        []struct {
		Interface  string `json:"interface"`
		Bytes      uint64 `json:"bytes"`
		Packets    uint64 `json:"packets"`
		Drops      uint64 `json:"drops"`
		Overlimits uint64 `json:"overlimits"`
		Backlog    uint64 `json:"backlog_bytes"`
	} `json:"egress"`
}

type slicerStatus struct {
	Shaping           string        `json:"shaping"`
	ShapingWhy        string        `json:"shaping_why"`
	PolicyDropPackets uint64        `json:"policy_drop_packets"`
	Slices            []sliceStatus `json:"slices"`
}

// slicers lists the slicer cubes (or just --on).
func slicers(on string) ([]string, error) {
	if on != "" {
		return []string{on}, nil
	}
	var cubes []cubeView
	if err := api().Do("GET", "/v1/cubes", nil, &cubes); err != nil {
		return nil, err
	}
	var out []string
	for _, c := range cubes {
		if c.Type == "slicer" {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// findSlice names the slicer holding slice name.
func findSlice(on, name string) (string, error) {
	cubes, err := slicers(on)
	if err != nil {
		return "", err
	}
	var found []string
	for _, c := range cubes {
		var raw json.RawMessage
		if api().Do("GET", "/v1/cubes/"+url.PathEscape(c)+"/tables/slices/"+url.PathEscape(name), nil, &raw) == nil {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no slice named %q (slicers: %s)", name, strings.Join(cubes, ", "))
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("slice %q is in several slicers (%s): name one with --on", name, strings.Join(found, ", "))
}

// parseRule reads "kind=value[,port=N]": dst=198.18.0.0/24, vlan=10,
// proto=udp,port=2152, teid=100-199, ue_pool=198.18.64.0/18, in_port=p1.
func parseRule(s string) (map[string]any, error) {
	out := map[string]any{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("rule %q: want kind=value (in_port, vlan, src, dst, dscp, proto[,port], teid, ue_pool)", s)
		}
		switch k {
		case "vlan", "dscp", "port":
			var n int
			if _, err := fmt.Sscan(v, &n); err != nil {
				return nil, fmt.Errorf("rule %q: %s wants a number", s, k)
			}
			out[k] = n
		case "in_port", "src", "dst", "proto", "teid", "ue_pool":
			out[k] = v
		default:
			return nil, fmt.Errorf("rule %q: unknown kind %q (in_port, vlan, src, dst, dscp, proto[,port], teid, ue_pool)", s, k)
		}
	}
	return out, nil
}

func sliceCmd() *cobra.Command {
	c := &cobra.Command{Use: "slice", Short: "Create, show, list and delete network slices (slicer cubes' slices)",
		Long: "A slice is a tenant's share of an entry point: classification rules, its chain's entry (a port of\n" +
			"the tenant's cube, --chain, or a slicer port peered with it, --port), a rate limit, a guaranteed minimum, a priority class and a latency target. Slices live in\n" +
			"slicer cubes (the administrator's); see docs/nf/slicer.md."}
	var on string
	var (
		id, priority              int
		tenantName, port, entry   string
		chain                     string
		rules                     []string
		rateS, minS               string
		ratePps, burst, burstPkts uint64
		latency                   float64
	)
	create := &cobra.Command{
		Use:   "create NAME --on SLICER (--chain CUBE:PORT | --port PORT) [--rule KIND=VALUE ...]",
		Short: "Create a slice (or replace it with --replace)",
		Example: "  edgenf slice create cctv --on edge --tenant cctv --port cctv --rule vlan=30 --min 20mbit --rate 50mbit --priority 2\n" +
			"  edgenf slice create rail --on edge --port rail --rule dst=198.19.8.0/24 --rule proto=udp,port=5060 --latency-ms 5 --min 10mbit\n" +
			"  edgenf slice create iot7 --on edge --tenant iot7 --chain iot7-fw:p0 --rule vlan=107",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if on == "" {
				return fmt.Errorf("--on SLICER is required: the slicer cube the slice belongs to")
			}
			body := map[string]any{"name": args[0]}
			if id == 0 {
				var rows []struct {
					ID int `json:"id"`
				}
				if err := api().Do("GET", "/v1/cubes/"+url.PathEscape(on)+"/tables/slices", nil, &rows); err != nil {
					return err
				}
				used := map[int]bool{}
				for _, r := range rows {
					used[r.ID] = true
				}
				for id = 1; used[id]; id++ {
				}
			}
			body["id"] = id
			for k, v := range map[string]string{"tenant": tenantName, "entry": entry, "port": port, "chain": chain} {
				if v != "" {
					body[k] = v
				}
			}
			var rs []map[string]any
			for _, r := range rules {
				m, err := parseRule(r)
				if err != nil {
					return err
				}
				rs = append(rs, m)
			}
			if len(rs) > 0 {
				body["rules"] = rs
			}
			for k, v := range map[string]string{"rate_bps": rateS, "min_bps": minS} {
				if v == "" {
					continue
				}
				n, err := rate.Parse(v)
				if err != nil {
					return fmt.Errorf("--%s: %v", map[string]string{"rate_bps": "rate", "min_bps": "min"}[k], err)
				}
				body[k] = n
			}
			for k, v := range map[string]uint64{"rate_pps": ratePps, "burst_bytes": burst, "burst_packets": burstPkts} {
				if v != 0 {
					body[k] = v
				}
			}
			if cmd.Flags().Changed("priority") {
				body["priority"] = priority
			}
			if latency != 0 {
				body["latency_ms"] = latency
			}
			method, path := "POST", "/v1/cubes/"+url.PathEscape(on)+"/tables/slices"
			if replace, _ := cmd.Flags().GetBool("replace"); replace {
				method, path = "PUT", path+"/"+url.PathEscape(args[0])
			}
			if err := api().Do(method, path, body, nil); err != nil {
				return err
			}
			fmt.Printf("slice %s (id %d) in %s\n", args[0], id, on)
			return nil
		},
	}
	f := create.Flags()
	f.IntVar(&id, "id", 0, "slice id 1..1023: md->tenant and HTB class ed00:100+id (default: the lowest free)")
	f.StringVar(&tenantName, "tenant", "", "owner tenant")
	f.StringVar(&port, "port", "", "slicer port peered with the slice's chain entry (up to 63 slices)")
	f.StringVar(&chain, "chain", "", "the slice's chain entry CUBE:PORT, a port with no peer of a cube of the slice's tenant, entered straight from the slicer (up to 1023 slices)")
	f.StringVar(&entry, "entry", "", "entry port its return traffic leaves by (default: the slicer's uplink)")
	f.StringArrayVar(&rules, "rule", nil, "classification rule KIND=VALUE (in_port, vlan, src, dst, dscp, proto[,port], teid, ue_pool); repeat for several")
	f.StringVar(&rateS, "rate", "", "rate limit, policed at ingress (100mbit, 1.5gbit, bits/s)")
	f.Uint64Var(&ratePps, "rate-pps", 0, "rate limit in packets/s")
	f.Uint64Var(&burst, "burst", 0, "burst of --rate in bytes (default 10 ms of it)")
	f.Uint64Var(&burstPkts, "burst-packets", 0, "burst of --rate-pps in packets (default 10 ms of it)")
	f.StringVar(&minS, "min", "", "guaranteed minimum under contention at the egress interfaces")
	f.IntVar(&priority, "priority", 4, "priority class, 0 (highest) .. 7")
	f.Float64Var(&latency, "latency-ms", 0, "queueing-delay target, checked at admission")
	f.Bool("replace", false, "replace the slice if it exists")

	get := &cobra.Command{
		Use: "get NAME", Short: "A slice: its settings, counters (in, return, policer drops) and egress HTB classes",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sl, err := findSlice(on, args[0])
			if err != nil {
				return err
			}
			var def json.RawMessage
			if err := api().Do("GET", "/v1/cubes/"+url.PathEscape(sl)+"/tables/slices/"+url.PathEscape(args[0]), nil, &def); err != nil {
				return err
			}
			var st slicerStatus
			if err := api().Do("GET", "/v1/cubes/"+url.PathEscape(sl)+"/views/status", nil, &st); err != nil {
				return err
			}
			var mine *sliceStatus
			for i := range st.Slices {
				if st.Slices[i].Name == args[0] {
					mine = &st.Slices[i]
				}
			}
			if mine == nil {
				return fmt.Errorf("slice %s: no status", args[0])
			}
			var settings map[string]any
			json.Unmarshal(def, &settings)
			out := map[string]any{"slicer": sl, "shaping": st.Shaping, "shaping_why": st.ShapingWhy, "slice": settings, "status": mine}
			return show(os.Stdout, out, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "slice\t%s (id %d) in %s\n", mine.Name, mine.ID, sl)
				fmt.Fprintf(tw, "tenant\t%s\n", mine.Tenant)
				if mine.Chain != "" {
					fmt.Fprintf(tw, "chain\tentry %s\n", mine.Chain)
				} else {
					fmt.Fprintf(tw, "chain\tport %s\n", mine.Port)
				}
				fmt.Fprintf(tw, "shaping\t%s (%s); priority %d, class %s\n", st.Shaping, st.ShapingWhy, mine.Priority, dash(mine.Class))
				b, _ := json.Marshal(settings["rules"])
				fmt.Fprintf(tw, "rules\t%s\n", b)
				for _, k := range []string{"rate_bps", "min_bps"} {
					if v, ok := settings[k].(float64); ok {
						fmt.Fprintf(tw, "%s\t%s\n", strings.TrimSuffix(k, "_bps"), rate.Bits(uint64(v)))
					}
				}
				fmt.Fprintf(tw, "in\t%d packets, %d bytes\n", mine.InPackets, mine.InBytes)
				fmt.Fprintf(tw, "return\t%d packets\n", mine.ReturnPackets)
				fmt.Fprintf(tw, "drops\tpolicer %d", mine.PolicePackets)
				for _, e := range mine.Egress {
					fmt.Fprintf(tw, ", shaper %d on %s", e.Drops, e.Interface)
				}
				fmt.Fprintln(tw)
				for _, e := range mine.Egress {
					fmt.Fprintf(tw, "egress %s\t%d packets, %d bytes sent; %d bytes queued; waited %d times\n", e.Interface, e.Packets, e.Bytes, e.Backlog, e.Overlimits)
				}
			})
		},
	}
	list := &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "Every slice of every slicer (or of --on) with its counters",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cubes, err := slicers(on)
			if err != nil {
				return err
			}
			type row struct {
				Slicer string `json:"slicer"`
				sliceStatus
			}
			var rows []row
			for _, c := range cubes {
				var st slicerStatus
				if err := api().Do("GET", "/v1/cubes/"+url.PathEscape(c)+"/views/status", nil, &st); err != nil {
					return err
				}
				for _, s := range st.Slices {
					rows = append(rows, row{c, s})
				}
			}
			return show(os.Stdout, rows, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "SLICER\tSLICE\tID\tTENANT\tINTO\tPRIO\tCLASS\tIN PKTS\tRETURN PKTS\tPOLICED\tSHAPER DROPS")
				for _, r := range rows {
					var shaped uint64
					for _, e := range r.Egress {
						shaped += e.Drops
					}
					into := "port " + r.Port
					if r.Chain != "" {
						into = r.Chain
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%d\n", r.Slicer, r.Name, r.ID, dash(r.Tenant), into, r.Priority, dash(r.Class),
						r.InPackets, r.ReturnPackets, r.PolicePackets, shaped)
				}
			})
		},
	}
	del := &cobra.Command{
		Use: "delete NAME", Aliases: []string{"del", "rm"}, Short: "Delete a slice (its traffic then follows the default, or is dropped)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sl, err := findSlice(on, args[0])
			if err != nil {
				return err
			}
			if err := api().Do("DELETE", "/v1/cubes/"+url.PathEscape(sl)+"/tables/slices/"+url.PathEscape(args[0]), nil, nil); err != nil {
				return err
			}
			fmt.Printf("slice %s deleted from %s\n", args[0], sl)
			return nil
		},
	}
	for _, x := range []*cobra.Command{create, get, list, del} {
		x.Flags().StringVar(&on, "on", "", "the slicer cube (default: find the slice in every slicer)")
		x.RegisterFlagCompletionFunc("on", completeCubes)
	}
	c.AddCommand(create, get, list, del)
	return c
}
