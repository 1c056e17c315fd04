package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func getCmd() *cobra.Command {
	return &cobra.Command{
		Use:       "get cubes|cube NAME|ports CUBE|attachments|topology|types",
		Short:     "Show resources (-o table|json|yaml)",
		Example:   "  edgenf get cubes\n  edgenf get topology -o yaml > topo.yaml   # edit, then: edgenf apply -f topo.yaml",
		Args:      cobra.RangeArgs(1, 2),
		ValidArgs: []string{"cubes", "cube", "ports", "attachments", "topology", "types"},
		RunE: func(cmd *cobra.Command, args []string) error {
			need := func(n int) error {
				if len(args) != n {
					return fmt.Errorf("get %s takes %d argument(s)", args[0], n-1)
				}
				return nil
			}
			switch args[0] {
			case "cubes":
				return listCubes()
			case "cube":
				if err := need(2); err != nil {
					return err
				}
				var c cubeView
				if err := api().Do("GET", v1("cubes", args[1]), nil, &c); err != nil {
					return err
				}
				return show(os.Stdout, c, func(tw *tabwriter.Writer) { cubeTable(tw, c) })
			case "ports":
				if err := need(2); err != nil {
					return err
				}
				var ports []portView
				if err := api().Do("GET", v1("cubes", args[1], "ports"), nil, &ports); err != nil {
					return err
				}
				return show(os.Stdout, ports, func(tw *tabwriter.Writer) { portTable(tw, ports) })
			case "attachments":
				var a json.RawMessage
				if err := api().Do("GET", "/v1/attachments", nil, &a); err != nil {
					return err
				}
				return show(os.Stdout, a, nil)
			case "topology":
				var t json.RawMessage
				if err := api().Do("GET", "/v1/topology", nil, &t); err != nil {
					return err
				}
				if g.output == "table" {
					g.output = "yaml"
				}
				return show(os.Stdout, t, nil)
			case "types":
				return typesCmd().RunE(cmd, nil)
			}
			return fmt.Errorf("unknown resource %q (want cubes, cube, ports, attachments, topology or types)", args[0])
		},
	}
}

func cubeTable(tw *tabwriter.Writer, c cubeView) {
	fmt.Fprintf(tw, "Name:\t%s\nType:\t%s\nHook:\t%s\nTenant:\t%s\n", c.Name, c.Type, c.Hook, dash(c.Tenant))
	if c.Down != "" {
		fmt.Fprintf(tw, "Status:\tdown: %s\n", c.Down)
	}
	if len(c.Config) > 0 {
		fmt.Fprintf(tw, "Config:\t%s\n", c.Config)
	}
	if len(c.Ports) > 0 {
		fmt.Fprintln(tw)
		portTable(tw, c.Ports)
	}
	for name, rows := range c.Tables {
		fmt.Fprintf(tw, "\nTable %s: %d entries\n", name, len(rows))
	}
}

func describeCmd() *cobra.Command {
	return &cobra.Command{
		Use: "describe cube NAME", Short: "A cube with its ports, attachments and counters",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "cube" {
				return fmt.Errorf("describe supports: cube")
			}
			var c cubeView
			if err := api().Do("GET", v1("cubes", args[1]), nil, &c); err != nil {
				return err
			}
			var st cubeStats
			if err := api().Do("GET", v1("cubes", args[1], "stats"), nil, &st); err != nil {
				return err
			}
			var att []struct {
				Cube, Point string
			}
			api().Do("GET", "/v1/attachments", nil, &att)
			out := map[string]any{"cube": c, "stats": st, "attachments": att}
			return show(os.Stdout, out, func(tw *tabwriter.Writer) {
				cubeTable(tw, c)
				fmt.Fprintln(tw, "\nCOUNTERS\tRX PKTS\tTX PKTS\tDROPS\tPUNTS\tPUNTS OVER BUDGET")
				for _, r := range st.rows() {
					x := r[1].(counters)
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", r[0], x.RxPackets, x.TxPackets, x.DropPackets, x.PuntPackets, x.PuntRateDrops)
				}
				for _, a := range att {
					if a.Cube == c.Name {
						fmt.Fprintf(tw, "\nAttached to:\t%s\n", a.Point)
					}
				}
			})
		},
	}
}

func deleteCmd() *cobra.Command {
	return &cobra.Command{
		Use: "delete cube NAME | port CUBE PORT | attachment CUBE", Short: "Delete a resource",
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			var path string
			switch {
			case args[0] == "cube" && len(args) == 2:
				path = v1("cubes", args[1])
			case args[0] == "port" && len(args) == 3:
				path = v1("cubes", args[1], "ports", args[2])
			case args[0] == "attachment" && len(args) == 2:
				path = v1("attachments", args[1])
			default:
				return fmt.Errorf("usage: delete cube NAME | port CUBE PORT | attachment CUBE")
			}
			if err := api().Do("DELETE", path, nil, nil); err != nil {
				return err
			}
			fmt.Printf("%s deleted\n", args[0])
			return nil
		},
	}
}
