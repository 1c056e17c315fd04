package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/topofile"
	"github.com/spf13/cobra"
)

type change struct {
	Op     string `json:"op"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

func applyCmd() *cobra.Command {
	var file string
	var dry bool
	c := &cobra.Command{
		Use:   "apply -f TOPOLOGY",
		Short: "Make a topology file (YAML or JSON) the whole desired state",
		Long: "Compares the file with the running state and changes only the difference, all or nothing.\n" +
			"Applying the same file again changes nothing. Cubes not in the file are deleted.\n" +
			"`edgenf get topology -o yaml` prints the running state in the same format.",
		Example: "  edgenf apply -f examples/topologies/chain.yaml --dry-run\n  edgenf apply -f examples/topologies/chain.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return fmt.Errorf("-f TOPOLOGY is required")
			}
			body, err := topologyDocument(file)
			if err != nil {
				return err
			}
			path := "/v1/topology"
			if dry {
				path += "?dry_run=true"
			}
			var out struct {
				DryRun  bool     `json:"dry_run"`
				Changes []change `json:"changes"`
				// what each chain would cost per packet (dry runs)
				Estimate      []estimate.ChainCost `json:"estimate,omitempty"`
				EstimateError string               `json:"estimate_error,omitempty"`
			}
			if err := api().Do("PUT", path, json.RawMessage(body), &out); err != nil {
				return err
			}
			return show(os.Stdout, out, func(tw *tabwriter.Writer) {
				if len(out.Changes) == 0 {
					fmt.Fprintln(tw, "no changes: the running state matches", file)
					return
				}
				sign := map[string]string{"add": "+", "change": "~", "delete": "-"}
				for _, ch := range out.Changes {
					fmt.Fprintf(tw, "%s %s %s\t%s\n", sign[ch.Op], ch.Kind, ch.Name, ch.Detail)
				}
				if dry {
					fmt.Fprintf(tw, "(dry run: %d changes not applied)\n", len(out.Changes))
					writeDryRunEstimate(tw, out.Estimate, out.EstimateError)
				} else {
					fmt.Fprintf(tw, "%d changes applied\n", len(out.Changes))
				}
			})
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "topology file (YAML or JSON; - for stdin)")
	c.Flags().BoolVar(&dry, "dry-run", false, "only print what would change")
	return c
}

// topologyDocument reads a topology file ("-": standard input, its
// programs relative to the working directory) into the JSON document
// PUT /v1/topology takes.
func topologyDocument(file string) (json.RawMessage, error) {
	if file != "-" {
		return topofile.Read(file)
	}
	b, err := io.ReadAll(os.Stdin)
	if err != nil {
		return nil, err
	}
	doc, err := topofile.Decode(b, ".")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return doc, nil
}
