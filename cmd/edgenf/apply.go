package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
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
			var b []byte
			var err error
			if file == "-" {
				b, err = io.ReadAll(os.Stdin)
			} else {
				b, err = os.ReadFile(file)
			}
			if err != nil {
				return err
			}
			var doc any
			if err := yaml.Unmarshal(b, &doc); err != nil {
				return fmt.Errorf("%s: %v", file, err)
			}
			m, ok := doc.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: want a mapping with `cubes:` (and optionally `attachments:`)", file)
			}
			dir := "."
			if file != "-" {
				dir = filepath.Dir(file)
			}
			if err := inlinePrograms(m, dir); err != nil {
				return fmt.Errorf("%s: %v", file, err)
			}
			body, err := json.Marshal(doc)
			if err != nil {
				return fmt.Errorf("%s: %v", file, err)
			}
			path := "/v1/topology"
			if dry {
				path += "?dry_run=true"
			}
			var out struct {
				DryRun  bool     `json:"dry_run"`
				Changes []change `json:"changes"`
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

// inlinePrograms reads the P4 programs a topology file names (a p4 cube's
// config.program without config.source), relative to the file's directory.
func inlinePrograms(doc map[string]any, dir string) error {
	cubes, _ := doc["cubes"].([]any)
	for _, x := range cubes {
		c, _ := x.(map[string]any)
		cfg, _ := c["config"].(map[string]any)
		if c["type"] != "p4" {
			continue
		}
		if err := inlineProgram(cfg, dir); err != nil {
			return fmt.Errorf("cube %v: %v", c["name"], err)
		}
	}
	return nil
}

// inlineProgram puts the text of the program p4 settings name (program,
// relative to dir) in, unless they have it: the daemon reads no file on a
// client's behalf.
func inlineProgram(cfg map[string]any, dir string) error {
	prog, _ := cfg["program"].(string)
	if prog == "" || cfg["source"] != nil {
		return nil
	}
	if !filepath.IsAbs(prog) {
		prog = filepath.Join(dir, prog)
	}
	ps, err := programSettings(prog)
	if err != nil {
		return err
	}
	for k, v := range ps {
		cfg[k] = v
	}
	return nil
}
