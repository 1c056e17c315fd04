package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// schema is the part of the API's JSON Schema the CLI needs to type k=v.
type schema struct {
	Type       string             `json:"type"`
	Properties map[string]*schema `json:"properties"`
	Items      *schema            `json:"items"`
}

type typeModel struct {
	Name    string  `json:"name"`
	Config  *schema `json:"config"`
	Tables  []model `json:"tables"`
	Actions []model `json:"actions"`
}

type model struct {
	Name   string  `json:"name"`
	Schema *schema `json:"schema"`
}

func fetchType(name string) (*typeModel, error) {
	var t typeModel
	if err := api().Do("GET", v1("types", name), nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

func cubeType(cube string) (*typeModel, error) {
	var c cubeView
	if err := api().Do("GET", v1("cubes", cube), nil, &c); err != nil {
		return nil, err
	}
	return fetchType(c.Type)
}

func (t *typeModel) table(name string) (*schema, error) {
	var names []string
	for _, tb := range t.Tables {
		if tb.Name == name {
			return tb.Schema, nil
		}
		names = append(names, tb.Name)
	}
	return nil, fmt.Errorf("NF type %s has no table %q (tables: %s)", t.Name, name, strings.Join(names, ", "))
}

// parseKV builds a JSON object from key=value words, typed by the schema:
// integers, booleans, lists (comma-separated), or JSON for objects.
func parseKV(sc *schema, words []string) (map[string]any, error) {
	out := map[string]any{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want key=value", w)
		}
		var ps *schema
		if sc != nil && sc.Properties != nil {
			if ps = sc.Properties[k]; ps == nil {
				return nil, fmt.Errorf("unknown field %q (fields: %s)", k, fieldNames(sc))
			}
		}
		val, err := typed(ps, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
		out[k] = val
	}
	return out, nil
}

func fieldNames(sc *schema) string {
	var n []string
	for k := range sc.Properties {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

func typed(sc *schema, v string) (any, error) {
	if sc == nil {
		var j any
		if json.Unmarshal([]byte(v), &j) == nil {
			return j, nil
		}
		return v, nil
	}
	switch sc.Type {
	case "integer":
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("want an integer, got %q", v)
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("want a number, got %q", v)
		}
		return f, nil
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("want true or false, got %q", v)
		}
		return b, nil
	case "array":
		if strings.HasPrefix(v, "[") {
			var j any
			if err := json.Unmarshal([]byte(v), &j); err != nil {
				return nil, fmt.Errorf("invalid JSON list: %v", err)
			}
			return j, nil
		}
		var list []any
		if v == "" {
			return []any{}, nil
		}
		for _, part := range strings.Split(v, ",") {
			e, err := typed(sc.Items, part)
			if err != nil {
				return nil, err
			}
			list = append(list, e)
		}
		return list, nil
	case "object", "":
		var j any
		if err := json.Unmarshal([]byte(v), &j); err == nil {
			return j, nil
		}
		if sc.Type == "object" {
			return nil, fmt.Errorf("want a JSON object, got %q", v)
		}
	}
	return v, nil
}

// settingsArg builds a cube's settings from --config JSON and --set words.
func settingsArg(typ, config string, sets []string) (any, error) {
	if config == "" && len(sets) == 0 {
		return nil, nil
	}
	return mergeSettings(typ, nil, config, sets)
}

func mergeSettings(typ string, cur json.RawMessage, config string, sets []string) (map[string]any, error) {
	out := map[string]any{}
	if len(cur) > 0 {
		json.Unmarshal(cur, &out)
	}
	if config != "" {
		out = map[string]any{}
		if err := json.Unmarshal([]byte(config), &out); err != nil {
			return nil, fmt.Errorf("--config: %v", err)
		}
	}
	if len(sets) > 0 {
		t, err := fetchType(typ)
		if err != nil {
			return nil, err
		}
		kv, err := parseKV(t.Config, sets)
		if err != nil {
			return nil, err
		}
		for k, v := range kv {
			out[k] = v
		}
	}
	return out, nil
}

// readEntries reads a JSON or YAML file (or - for stdin) holding one entry or
// a list of entries.
func readEntries(path string) (json.RawMessage, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return json.Marshal(v)
}

func tableCmd() *cobra.Command {
	c := &cobra.Command{Use: "table", Short: "List, add, replace and delete NF table entries",
		Long: "Tables are an NF type's keyed collections (see `edgenf types TYPE`). Entries are given as key=value\n" +
			"words typed by the model, as --json, or from a JSON/YAML file (-f, one entry or a list)."}
	list := &cobra.Command{
		Use: "list CUBE TABLE", Aliases: []string{"ls"}, Short: "List a table's entries",
		Args: cobra.ExactArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var rows json.RawMessage
			if err := api().Do("GET", v1("cubes", args[0], "tables", args[1]), nil, &rows); err != nil {
				return err
			}
			return show(os.Stdout, rows, nil)
		},
	}
	var js, file string
	entryBody := func(cube, table string, words []string) (any, error) {
		switch {
		case js != "":
			return json.RawMessage(js), nil
		case file != "":
			return readEntries(file)
		}
		if len(words) == 0 {
			return nil, fmt.Errorf("give the entry as key=value words, --json or -f")
		}
		t, err := cubeType(cube)
		if err != nil {
			return nil, err
		}
		sc, err := t.table(table)
		if err != nil {
			return nil, err
		}
		return parseKV(sc, words)
	}
	add := &cobra.Command{
		Use: "add CUBE TABLE [key=value ...]", Short: "Add one entry (or a list from -f): all or none",
		Example: "  edgenf table add c1 rules in_port=p0 out_port=p1\n  edgenf table add fw1 rules -f rules.yaml",
		Args:    cobra.MinimumNArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := entryBody(args[0], args[1], args[2:])
			if err != nil {
				return err
			}
			var out json.RawMessage
			if err := api().Do("POST", v1("cubes", args[0], "tables", args[1]), body, &out); err != nil {
				return err
			}
			return show(os.Stdout, out, nil)
		},
	}
	add.Flags().StringVar(&js, "json", "", "the entry as JSON")
	add.Flags().StringVarP(&file, "file", "f", "", "JSON or YAML file with one entry or a list (- for stdin)")
	set := &cobra.Command{
		Use: "set CUBE TABLE KEY [key=value ...]", Short: "Add or replace the entry with KEY",
		Args: cobra.MinimumNArgs(3), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := entryBody(args[0], args[1], args[3:])
			if err != nil {
				return err
			}
			return api().Do("PUT", v1("cubes", args[0], "tables", args[1], args[2]), body, nil)
		},
	}
	set.Flags().StringVar(&js, "json", "", "the entry as JSON")
	load := &cobra.Command{
		Use: "load CUBE TABLE -f FILE", Short: "Replace the whole table with a list of entries, atomically",
		Args: cobra.ExactArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return fmt.Errorf("-f FILE is required")
			}
			body, err := readEntries(file)
			if err != nil {
				return err
			}
			var out map[string]int
			if err := api().Do("PUT", v1("cubes", args[0], "tables", args[1]), body, &out); err != nil {
				return err
			}
			fmt.Printf("table %s of %s now has %d entries\n", args[1], args[0], out["entries"])
			return nil
		},
	}
	load.Flags().StringVarP(&file, "file", "f", "", "JSON or YAML list of entries (- for stdin)")
	del := &cobra.Command{
		Use: "del CUBE TABLE KEY", Aliases: []string{"delete", "rm"}, Short: "Delete the entry with KEY",
		Args: cobra.ExactArgs(3), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := api().Do("DELETE", v1("cubes", args[0], "tables", args[1], args[2]), nil, nil); err != nil {
				return err
			}
			fmt.Printf("entry %s deleted from %s of %s\n", args[2], args[1], args[0])
			return nil
		},
	}
	c.AddCommand(list, add, set, load, del)
	return c
}

func viewCmd() *cobra.Command {
	return &cobra.Command{
		Use: "view CUBE VIEW", Short: "Show one of a cube's read-only views (learned tables, sessions, counters)",
		Example: "  edgenf view m1 counters\n  edgenf view br0 fdb",
		Args:    cobra.ExactArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var v json.RawMessage
			if err := api().Do("GET", v1("cubes", args[0], "views", args[1]), nil, &v); err != nil {
				return err
			}
			return show(os.Stdout, v, nil)
		},
	}
}

func actionCmd() *cobra.Command {
	var js string
	c := &cobra.Command{
		Use: "action CUBE ACTION [key=value ...]", Short: "Run an operation on a cube (flush, reset, ...)",
		Args: cobra.MinimumNArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var body any
			if js != "" {
				body = json.RawMessage(js)
			} else if len(args) > 2 {
				t, err := cubeType(args[0])
				if err != nil {
					return err
				}
				var sc *schema
				for _, a := range t.Actions {
					if a.Name == args[1] {
						sc = a.Schema
					}
				}
				kv, err := parseKV(sc, args[2:])
				if err != nil {
					return err
				}
				body = kv
			}
			var out json.RawMessage
			if err := api().Do("POST", v1("cubes", args[0], "actions", args[1]), body, &out); err != nil {
				return err
			}
			return show(os.Stdout, out, nil)
		},
	}
	c.Flags().StringVar(&js, "json", "", "arguments as JSON")
	return c
}
