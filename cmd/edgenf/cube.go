package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/edgenf/edgenf/internal/topofile"
	"github.com/spf13/cobra"
)

// cubeView is the JSON shape of a cube in the API.
type cubeView struct {
	Name   string                                `json:"name"`
	Type   string                                `json:"type"`
	Hook   string                                `json:"hook"`
	Tenant string                                `json:"tenant,omitempty"`
	Ports  []portView                            `json:"ports,omitempty"`
	Config json.RawMessage                       `json:"config,omitempty"`
	Tables map[string]map[string]json.RawMessage `json:"tables,omitempty"`
	Down   string                                `json:"down,omitempty"` // why it is not running
}

// status is "up", or "down" (the reason is in describe and -o json).
func (c cubeView) status() string {
	if c.Down != "" {
		return "down"
	}
	return "up"
}

type portView struct {
	Name      string          `json:"name"`
	Index     int             `json:"index"`
	Peer      string          `json:"peer,omitempty"`
	MAC       string          `json:"mac,omitempty"`
	Addresses []string        `json:"addresses,omitempty"`
	Config    json.RawMessage `json:"config,omitempty"`
}

func cubeCmd() *cobra.Command {
	c := &cobra.Command{Use: "cube", Short: "Create, list, swap and delete cubes"}
	var hook, tenant, config, program string
	var sets []string
	add := &cobra.Command{
		Use:   "add NAME TYPE",
		Short: "Create a cube of an NF type",
		Example: "  edgenf cube add c1 portfwd\n  edgenf cube add fw1 firewall --hook tc\n" +
			"  edgenf cube add r1 router --set arp_timeout=300\n  edgenf cube add sw1 p4 --program examples/p4/l2switch.p4",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"name": args[0], "type": args[1]}
			if hook != "" {
				body["hook"] = hook
			}
			if tenant != "" {
				body["tenant"] = tenant
			}
			cfg, err := settingsArg(args[1], config, sets)
			if err != nil {
				return err
			}
			if program != "" {
				ps, err := topofile.ProgramSettings(program)
				if err != nil {
					return err
				}
				if m, ok := cfg.(map[string]any); ok { // --config/--set: cpu_port, learn, ...
					for k, v := range ps {
						m[k] = v
					}
					ps = m
				}
				cfg = ps
			}
			if m, ok := cfg.(map[string]any); ok && args[1] == "p4" {
				if err := topofile.InlineProgram(m, "."); err != nil {
					return err
				}
			}
			if cfg != nil {
				body["config"] = cfg
			}
			var out cubeView
			if err := api().Do("POST", "/v1/cubes", body, &out); err != nil {
				return err
			}
			return show(os.Stdout, out, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "cube %s created (%s, hook %s)\n", out.Name, out.Type, out.Hook)
			})
		},
	}
	add.Flags().StringVar(&hook, "hook", "", "xdp or tc (default: the type's first)")
	add.Flags().StringVar(&tenant, "tenant", "", "tenant owning the cube")
	add.Flags().StringVar(&config, "config", "", "settings as JSON")
	add.Flags().StringArrayVar(&sets, "set", nil, "one setting as key=value (repeatable)")
	add.Flags().StringVar(&program, "program", "", "P4 program of a p4 cube (compiled by the daemon)")
	add.RegisterFlagCompletionFunc("hook", fixedCompletion("xdp", "tc"))
	add.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) != 1 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var types []struct {
			Name string `json:"name"`
		}
		api().Do("GET", "/v1/types", nil, &types)
		var out []string
		for _, t := range types {
			out = append(out, t.Name)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}

	del := &cobra.Command{
		Use: "del NAME", Aliases: []string{"delete", "rm"}, Short: "Delete a cube (its peers are unpeered)",
		Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := api().Do("DELETE", v1("cubes", args[0]), nil, nil); err != nil {
				return err
			}
			fmt.Printf("cube %s deleted\n", args[0])
			return nil
		},
	}
	list := &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List cubes", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return listCubes() },
	}
	var object string
	swap := &cobra.Command{
		Use:   "swap NAME",
		Short: "Hot-swap a cube's program (keeps its maps; no packet lost)",
		Long:  "Reloads the cube's program from the daemon's NF type, or from --object (an eBPF ELF built against bpf/include),\nand switches traffic to it with one atomic patch-panel update. Maps and counters are kept.",
		Args:  cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]string{}
			if object != "" {
				b, err := os.ReadFile(object)
				if err != nil {
					return err
				}
				body["object"] = base64.StdEncoding.EncodeToString(b)
			}
			if err := api().Do("POST", v1("cubes", args[0], "swap"), body, nil); err != nil {
				return err
			}
			fmt.Printf("cube %s swapped\n", args[0])
			return nil
		},
	}
	swap.Flags().StringVar(&object, "object", "", "eBPF object file to load instead of the type's own")
	var pcfg, pprog string
	var psets []string
	set := &cobra.Command{
		Use: "set NAME", Short: "Change a cube's settings", Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		Example: "  edgenf cube set fw1 --set ingress_policy=drop",
		RunE: func(cmd *cobra.Command, args []string) error {
			var cur cubeView
			if err := api().Do("GET", v1("cubes", args[0]), nil, &cur); err != nil {
				return err
			}
			cfg, err := mergeSettings(cur.Type, cur.Config, pcfg, psets)
			if err != nil {
				return err
			}
			if cur.Type == "p4" {
				if err := topofile.InlineProgram(cfg, "."); err != nil {
					return err
				}
			}
			if pprog != "" {
				ps, err := topofile.ProgramSettings(pprog)
				if err != nil {
					return err
				}
				for k, v := range ps { // other settings (cpu_port, learn, ...) kept
					cfg[k] = v
				}
			}
			if err := api().Do("PUT", v1("cubes", args[0], "config"), cfg, nil); err != nil {
				return err
			}
			fmt.Printf("cube %s updated\n", args[0])
			return nil
		},
	}
	set.Flags().StringVar(&pcfg, "config", "", "whole settings object as JSON")
	set.Flags().StringArrayVar(&psets, "set", nil, "one setting as key=value (repeatable)")
	set.Flags().StringVar(&pprog, "program", "", "a new P4 program for a p4 cube (swapped in place, entries kept)")
	c.AddCommand(add, del, list, swap, set)
	return c
}

func listCubes() error {
	var cubes []cubeView
	if err := api().Do("GET", "/v1/cubes", nil, &cubes); err != nil {
		return err
	}
	return show(os.Stdout, cubes, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "NAME\tTYPE\tHOOK\tTENANT\tSTATUS\tPORTS")
		for _, c := range cubes {
			var ports []string
			for _, p := range c.Ports {
				peer := p.Peer
				if peer == "" {
					peer = "-"
				}
				ports = append(ports, fmt.Sprintf("%s->%s", p.Name, peer))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Type, c.Hook, dash(c.Tenant), c.status(), dash(strings.Join(ports, " ")))
		}
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func portCmd() *cobra.Command {
	c := &cobra.Command{Use: "port", Short: "Add, change, list and delete cube ports"}
	var peer, mac, config string
	var index int
	var ips []string
	add := &cobra.Command{
		Use: "add CUBE PORT", Short: "Add a port to a cube",
		Example: "  edgenf port add c1 p0 --peer veth0\n  edgenf port add r1 p0 --peer veth0 --ip 198.18.0.1/24\n  edgenf port add c1 p1 --peer c2:p0",
		Args:    cobra.ExactArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"name": args[1]}
			if cmd.Flags().Changed("index") {
				body["index"] = index
			}
			if peer != "" {
				body["peer"] = peer
			}
			if mac != "" {
				body["mac"] = mac
			}
			if len(ips) > 0 {
				body["addresses"] = ips
			}
			if config != "" {
				body["config"] = json.RawMessage(config)
			}
			var out portView
			if err := api().Do("POST", v1("cubes", args[0], "ports"), body, &out); err != nil {
				return err
			}
			return show(os.Stdout, out, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "port %s:%s added (index %d, peer %s)\n", args[0], out.Name, out.Index, dash(out.Peer))
			})
		},
	}
	add.Flags().StringVar(&peer, "peer", "", "Linux interface or cube:port")
	add.Flags().IntVar(&index, "index", 0, "port number in the fast path (default: lowest free)")
	add.Flags().StringVar(&mac, "mac", "", "MAC address of the port")
	add.Flags().StringArrayVar(&ips, "ip", nil, "address/prefix of the port (repeatable)")
	add.Flags().StringVar(&config, "config", "", "per-port settings as JSON")

	var setPeer, setMAC, setConfig string
	var setIPs []string
	var noPeer bool
	set := &cobra.Command{
		Use: "set CUBE PORT", Short: "Change a port's peer, MAC, addresses or settings",
		Args: cobra.ExactArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{}
			if cmd.Flags().Changed("peer") {
				body["peer"] = setPeer
			}
			if noPeer {
				body["peer"] = ""
			}
			if cmd.Flags().Changed("mac") {
				body["mac"] = setMAC
			}
			if cmd.Flags().Changed("ip") {
				body["addresses"] = setIPs
			}
			if setConfig != "" {
				body["config"] = json.RawMessage(setConfig)
			}
			if len(body) == 0 {
				return fmt.Errorf("nothing to change: give --peer, --no-peer, --mac, --ip or --config")
			}
			if err := api().Do("PATCH", v1("cubes", args[0], "ports", args[1]), body, nil); err != nil {
				return err
			}
			fmt.Printf("port %s:%s updated\n", args[0], args[1])
			return nil
		},
	}
	set.Flags().StringVar(&setPeer, "peer", "", "new peer: Linux interface or cube:port")
	set.Flags().BoolVar(&noPeer, "no-peer", false, "remove the peering")
	set.Flags().StringVar(&setMAC, "mac", "", "MAC address")
	set.Flags().StringArrayVar(&setIPs, "ip", nil, "addresses (replace all; repeatable)")
	set.Flags().StringVar(&setConfig, "config", "", "per-port settings as JSON")
	del := &cobra.Command{
		Use: "del CUBE PORT", Aliases: []string{"delete", "rm"}, Short: "Delete a port (and its peering)",
		Args: cobra.ExactArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := api().Do("DELETE", v1("cubes", args[0], "ports", args[1]), nil, nil); err != nil {
				return err
			}
			fmt.Printf("port %s:%s deleted\n", args[0], args[1])
			return nil
		},
	}
	list := &cobra.Command{
		Use: "list CUBE", Aliases: []string{"ls"}, Short: "List a cube's ports",
		Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var ports []portView
			if err := api().Do("GET", v1("cubes", args[0], "ports"), nil, &ports); err != nil {
				return err
			}
			return show(os.Stdout, ports, func(tw *tabwriter.Writer) { portTable(tw, ports) })
		},
	}
	c.AddCommand(add, set, del, list)
	return c
}

func portTable(tw *tabwriter.Writer, ports []portView) {
	fmt.Fprintln(tw, "PORT\tINDEX\tPEER\tMAC\tADDRESSES")
	for _, p := range ports {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", p.Name, p.Index, dash(p.Peer), dash(p.MAC), dash(strings.Join(p.Addresses, ",")))
	}
}

func splitPortRef(s string) (string, string, error) {
	c, p, ok := strings.Cut(s, ":")
	if !ok || c == "" || p == "" {
		return "", "", fmt.Errorf("want CUBE:PORT, got %q", s)
	}
	return c, p, nil
}

func peerCmd() *cobra.Command {
	return &cobra.Command{
		Use: "peer CUBE:PORT PEER", Short: "Peer a cube port with a Linux interface or another cube port",
		Example: "  edgenf peer c1:p1 c2:p0\n  edgenf peer c1:p0 veth0",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, p, err := splitPortRef(args[0])
			if err != nil {
				return err
			}
			if err := api().Do("PATCH", v1("cubes", c, "ports", p), map[string]string{"peer": args[1]}, nil); err != nil {
				return err
			}
			fmt.Printf("%s peered with %s\n", args[0], args[1])
			return nil
		},
	}
}

func unpeerCmd() *cobra.Command {
	return &cobra.Command{
		Use: "unpeer CUBE:PORT", Short: "Remove a port's peering", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, p, err := splitPortRef(args[0])
			if err != nil {
				return err
			}
			if err := api().Do("PATCH", v1("cubes", c, "ports", p), map[string]string{"peer": ""}, nil); err != nil {
				return err
			}
			fmt.Printf("%s unpeered\n", args[0])
			return nil
		},
	}
}

func attachCmd() *cobra.Command {
	var position string
	c := &cobra.Command{
		Use:   "attach CUBE POINT",
		Short: "Attach a transparent cube to a cube port (cube:port) or a Linux interface",
		Long: "Transparent cubes on one point form an ordered stack: position first is outermost (closest to the\n" +
			"peer, first on the way in, last on the way out); last (default) is innermost.",
		Example: "  edgenf attach m1 c2:p0\n  edgenf attach fw1 veth0 --position first\n  edgenf attach m2 c2:p0 --position before:m1",
		Args:    cobra.ExactArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]string{"cube": args[0], "point": args[1], "position": position}
			if err := api().Do("POST", "/v1/attachments", body, nil); err != nil {
				return err
			}
			fmt.Printf("%s attached to %s\n", args[0], args[1])
			return nil
		},
	}
	c.Flags().StringVar(&position, "position", "last", "first, last, before:CUBE or after:CUBE")
	return c
}

func detachCmd() *cobra.Command {
	return &cobra.Command{
		Use: "detach CUBE", Short: "Detach a transparent cube", Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := api().Do("DELETE", v1("attachments", args[0]), nil, nil); err != nil {
				return err
			}
			fmt.Printf("%s detached\n", args[0])
			return nil
		},
	}
}

func injectCmd() *cobra.Command {
	var out bool
	c := &cobra.Command{
		Use:   "inject CUBE PORT HEXFRAME",
		Short: "Inject a frame into a cube port as if received (or --out: send it out of the port)",
		Args:  cobra.ExactArgs(3), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "in"
			if out {
				dir = "out"
			}
			return api().Do("POST", v1("cubes", args[0], "ports", args[1], "inject"), map[string]string{"frame": args[2], "direction": dir}, nil)
		},
	}
	c.Flags().BoolVar(&out, "out", false, "send out of the port instead of into it")
	return c
}

func typesCmd() *cobra.Command {
	return &cobra.Command{
		Use: "types [TYPE]", Short: "List NF types, or show one type's model", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				var t json.RawMessage
				if err := api().Do("GET", v1("types", args[0]), nil, &t); err != nil {
					return err
				}
				if g.output == "table" {
					g.output = "yaml"
				}
				return show(os.Stdout, t, nil)
			}
			var types []struct {
				Name        string   `json:"name"`
				Description string   `json:"description"`
				Transparent bool     `json:"transparent"`
				Hooks       []string `json:"hooks"`
				Tables      []struct {
					Name string `json:"name"`
				} `json:"tables"`
			}
			if err := api().Do("GET", "/v1/types", nil, &types); err != nil {
				return err
			}
			return show(os.Stdout, types, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "TYPE\tKIND\tHOOKS\tTABLES\tDESCRIPTION")
				for _, t := range types {
					kind := "standard"
					if t.Transparent {
						kind = "transparent"
					}
					var tbs []string
					for _, tb := range t.Tables {
						tbs = append(tbs, tb.Name)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, kind, strings.Join(t.Hooks, ","), dash(strings.Join(tbs, ",")), t.Description)
				}
			})
		},
	}
}

func openapiCmd() *cobra.Command {
	return &cobra.Command{
		Use: "openapi", Short: "Print the API's OpenAPI 3 document", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var doc json.RawMessage
			if err := api().Do("GET", "/v1/openapi.json", nil, &doc); err != nil {
				return err
			}
			_, err := os.Stdout.Write(doc)
			return err
		},
	}
}
