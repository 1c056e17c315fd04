package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/spf13/cobra"
)

// The BMv2 simple_switch_CLI verbs, on a p4 cube of the daemon: match values
// and action parameters are positional, in the order the program declares
// them.

func p4Model(cube string) (*p4info.P4Info, error) {
	var info p4info.P4Info
	if err := api().Do("GET", "/v1/cubes/"+url.PathEscape(cube)+"/views/p4info", nil, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

func findTable(info *p4info.P4Info, name string) (*p4info.Table, error) {
	var names []string
	for _, t := range info.Tables {
		if t.Preamble.Name == name || t.Preamble.Alias == name || strings.HasSuffix(t.Preamble.Name, "."+name) {
			return t, nil
		}
		names = append(names, t.Preamble.Name)
	}
	return nil, fmt.Errorf("no table %q (tables: %s)", name, strings.Join(names, ", "))
}

func findAction(info *p4info.P4Info, name string) (*p4info.Action, error) {
	for _, a := range info.Actions {
		if a.Preamble.Name == name || a.Preamble.Alias == name || strings.HasSuffix(a.Preamble.Name, "."+name) {
			return a, nil
		}
	}
	return nil, fmt.Errorf("no action %q", name)
}

// bmv2Entry turns `TABLE ACTION MATCH... [=> PARAM...] [PRIORITY]` into an
// entry of the p4 NF type.
func bmv2Entry(info *p4info.P4Info, args []string) (map[string]any, error) {
	if len(args) < 2 {
		return nil, fmt.Errorf("want TABLE ACTION MATCH... [=> PARAM...] [PRIORITY]")
	}
	t, err := findTable(info, args[0])
	if err != nil {
		return nil, err
	}
	a, err := findAction(info, args[1])
	if err != nil {
		return nil, err
	}
	rest := args[2:]
	var matches, params []string
	if i := indexOf(rest, "=>"); i >= 0 {
		matches, params = rest[:i], rest[i+1:]
	} else {
		matches = rest
	}
	m, err := matchMap(t, matches)
	if err != nil {
		return nil, err
	}
	entry := map[string]any{"table": t.Preamble.Name, "action": a.Preamble.Name}
	if len(m) > 0 {
		entry["match"] = m
	}
	if needsPriority(t) {
		if len(params) != len(a.Params)+1 {
			return nil, fmt.Errorf("table %s has ternary/range/optional keys: give a priority after the action parameters", t.Preamble.Name)
		}
		prio, err := strconv.ParseUint(params[len(params)-1], 0, 32)
		if err != nil {
			return nil, fmt.Errorf("priority: want a number, got %q", params[len(params)-1])
		}
		entry["priority"] = prio
		params = params[:len(params)-1]
	}
	pm, err := paramMap(a, params)
	if err != nil {
		return nil, err
	}
	if len(pm) > 0 {
		entry["params"] = pm
	}
	return entry, nil
}

// modelTable fetches a p4 cube's model and finds one of its tables.
func modelTable(cube, table string) (*p4info.P4Info, *p4info.Table, error) {
	info, err := p4Model(cube)
	if err != nil {
		return nil, nil, err
	}
	t, err := findTable(info, table)
	return info, t, err
}

// matchMap names positional match values by the table's key fields.
func matchMap(t *p4info.Table, vals []string) (map[string]string, error) {
	if err := shellSplit(vals); err != nil {
		return nil, err
	}
	if len(vals) != len(t.MatchFields) {
		return nil, fmt.Errorf("table %s takes %d match values (%s), got %d", t.Preamble.Name, len(t.MatchFields), fieldList(t.MatchFields), len(vals))
	}
	m := map[string]string{}
	for i, f := range t.MatchFields {
		m[f.Name] = vals[i]
	}
	return m, nil
}

// paramMap names positional action parameters.
func paramMap(a *p4info.Action, vals []string) (map[string]string, error) {
	if len(vals) != len(a.Params) {
		var names []string
		for _, p := range a.Params {
			names = append(names, p.Name)
		}
		return nil, fmt.Errorf("action %s takes %d parameters (%s), got %d", a.Preamble.Name, len(a.Params), strings.Join(names, ", "), len(vals))
	}
	m := map[string]string{}
	for i, p := range a.Params {
		m[p.Name] = vals[i]
	}
	return m, nil
}

func needsPriority(t *p4info.Table) bool {
	for _, f := range t.MatchFields {
		switch f.MatchType {
		case "TERNARY", "RANGE", "OPTIONAL":
			return true
		}
	}
	return false
}

func fieldList(fs []p4info.MatchField) string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%s", f.Name, strings.ToLower(f.MatchType)))
	}
	return strings.Join(out, " ")
}

// shellSplit tells what a shell made of an unquoted "=>" or range "lo->hi"
// (BMv2's CLI is a shell of its own; edgenf's arguments pass through sh):
// the ">" redirected the output to a file named after the next word, which
// the command then never sees, so it saw "=" or "1024-" instead.
func shellSplit(args []string) error {
	for _, a := range args {
		if a == "=" {
			return fmt.Errorf(`a lone "=": the shell took the ">" of an unquoted => for a redirection (into a file named after the word that followed it): quote it, '=>'`)
		}
		if strings.HasSuffix(a, "-") && len(a) > 1 {
			return fmt.Errorf(`%q: the shell took the ">" of an unquoted range lo->hi for a redirection (into a file named after hi): quote it, '%s>hi'`, a, a)
		}
	}
	return nil
}

func indexOf(s []string, w string) int {
	for i, x := range s {
		if x == w {
			return i
		}
	}
	return -1
}

func entryKey(e map[string]any) string {
	var b strings.Builder
	b.WriteString(e["table"].(string))
	if m, ok := e["match"].(map[string]string); ok {
		for _, k := range sortedMapKeys(m) {
			fmt.Fprintf(&b, " %s=%s", k, m[k])
		}
	}
	if p, ok := e["priority"].(uint64); ok && p > 0 {
		fmt.Fprintf(&b, " @%d", p)
	}
	return b.String()
}

func sortedMapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func p4RuntimeCmds() []*cobra.Command {
	add := &cobra.Command{
		Use:     "table-add CUBE TABLE ACTION MATCH... [=> PARAM...] [PRIORITY]",
		Short:   "Add a table entry, BMv2 style",
		Example: "  edgenf p4 table-add r1 ipv4_lpm ipv4_forward 198.18.1.0/24 '=>' 02:00:00:00:01:01 1\n  edgenf p4 table-add fw acl deny '0x0a000000&&&0xff000000' '1024->2048' '=>' 10",
		Args:    cobra.MinimumNArgs(3), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := p4Model(args[0])
			if err != nil {
				return err
			}
			e, err := bmv2Entry(info, args[1:])
			if err != nil {
				return err
			}
			if err := api().Do("POST", "/v1/cubes/"+args[0]+"/tables/entries", e, nil); err != nil {
				return err
			}
			fmt.Printf("entry added: %s\n", entryKey(e))
			return nil
		},
	}
	del := &cobra.Command{
		Use: "table-delete CUBE TABLE MATCH... [PRIORITY]", Short: "Delete the entry with this match",
		Args: cobra.MinimumNArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, t, err := modelTable(args[0], args[1])
			if err != nil {
				return err
			}
			e := map[string]any{"table": t.Preamble.Name}
			vals := args[2:]
			if needsPriority(t) && len(vals) == len(t.MatchFields)+1 {
				p, err := strconv.ParseUint(vals[len(vals)-1], 0, 32)
				if err != nil {
					return fmt.Errorf("priority: %v", err)
				}
				e["priority"] = p
				vals = vals[:len(vals)-1]
			}
			m, err := matchMap(t, vals)
			if err != nil {
				return err
			}
			if len(m) > 0 {
				e["match"] = m
			}
			key := entryKey(e)
			if err := api().Do("DELETE", "/v1/cubes/"+args[0]+"/tables/entries/"+url.PathEscape(key), nil, nil); err != nil {
				return err
			}
			fmt.Printf("entry deleted: %s\n", key)
			return nil
		},
	}
	setDefault := &cobra.Command{
		Use: "table-set-default CUBE TABLE ACTION [PARAM...]", Short: "Set a table's default action",
		Args: cobra.MinimumNArgs(3), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			info, t, err := modelTable(args[0], args[1])
			if err != nil {
				return err
			}
			a, err := findAction(info, args[2])
			if err != nil {
				return err
			}
			pm, err := paramMap(a, args[3:])
			if err != nil {
				return err
			}
			d := map[string]any{"table": t.Preamble.Name, "action": a.Preamble.Name}
			if len(pm) > 0 {
				d["params"] = pm
			}
			return api().Do("PUT", "/v1/cubes/"+args[0]+"/tables/defaults/"+url.PathEscape(t.Preamble.Name), d, nil)
		},
	}
	dump := &cobra.Command{
		Use: "table-dump CUBE [TABLE]", Short: "List a cube's entries (of one table)",
		Args: cobra.RangeArgs(1, 2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var rows []struct {
				Table    string            `json:"table"`
				Match    map[string]string `json:"match"`
				Action   string            `json:"action"`
				Params   map[string]string `json:"params"`
				Priority uint32            `json:"priority"`
				Member   *uint32           `json:"member,omitempty"`
				Group    *uint32           `json:"group,omitempty"`
			}
			if err := api().Do("GET", "/v1/cubes/"+args[0]+"/tables/entries", nil, &rows); err != nil {
				return err
			}
			if len(args) == 2 {
				_, t, err := modelTable(args[0], args[1])
				if err != nil {
					return err
				}
				kept := rows[:0]
				for _, r := range rows {
					if r.Table == t.Preamble.Name {
						kept = append(kept, r)
					}
				}
				rows = kept
			}
			return show(os.Stdout, rows, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "TABLE\tMATCH\tACTION\tPARAMS\tPRIORITY")
				for _, r := range rows {
					switch { // tables implemented by an action profile (p4actprof.go)
					case r.Member != nil:
						r.Action = fmt.Sprintf("member %d", *r.Member)
					case r.Group != nil:
						r.Action = fmt.Sprintf("group %d", *r.Group)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", r.Table, kv(r.Match), r.Action, kv(r.Params), r.Priority)
				}
			})
		},
	}
	counter := &cobra.Command{
		Use: "counter-read CUBE [COUNTER]", Short: "Read a cube's P4 counters (non-zero indexes)",
		Args: cobra.RangeArgs(1, 2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var rows []map[string]any
			if err := api().Do("GET", "/v1/cubes/"+args[0]+"/views/counters", nil, &rows); err != nil {
				return err
			}
			if len(args) == 2 {
				kept := rows[:0]
				for _, r := range rows {
					if n, _ := r["counter"].(string); n == args[1] || strings.HasSuffix(n, "."+args[1]) {
						kept = append(kept, r)
					}
				}
				rows = kept
			}
			return show(os.Stdout, rows, nil)
		},
	}
	info := &cobra.Command{
		Use: "info CUBE", Short: "Print a p4 cube's P4Info model", Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var raw json.RawMessage
			if err := api().Do("GET", "/v1/cubes/"+args[0]+"/views/p4info", nil, &raw); err != nil {
				return err
			}
			_, err := os.Stdout.Write(append(raw, '\n'))
			return err
		},
	}
	regRead := &cobra.Command{
		Use:   "register-read CUBE NAME [INDEX|FIRST-LAST]",
		Short: "Read a cube's P4 register: one cell, a range of cells, or (no index) its non-zero cells",
		Args:  cobra.RangeArgs(2, 3), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				return nonZeroCells(args[0], args[1])
			}
			body := map[string]any{"register": args[1]}
			if err := cellRange(args[2], body); err != nil {
				return err
			}
			var out json.RawMessage
			if err := api().Do("POST", "/v1/cubes/"+url.PathEscape(args[0])+"/actions/register_read", body, &out); err != nil {
				return err
			}
			return show(os.Stdout, out, nil)
		},
	}
	regWrite := &cobra.Command{
		Use:   "register-write CUBE NAME INDEX|FIRST-LAST|* VALUE",
		Short: "Write cells of a cube's P4 register: one, a range, or '*' every cell",
		Args:  cobra.ExactArgs(4), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"register": args[1], "value": args[3]}
			if args[2] != "*" {
				if err := cellRange(args[2], body); err != nil {
					return err
				}
			}
			var out json.RawMessage
			if err := api().Do("POST", "/v1/cubes/"+url.PathEscape(args[0])+"/actions/register_write", body, &out); err != nil {
				return err
			}
			return show(os.Stdout, out, nil)
		},
	}
	regReset := &cobra.Command{
		Use:   "register-reset CUBE NAME [INDEX|FIRST-LAST]",
		Short: "Set cells of a cube's P4 register back to its initial value (0 without one): one, a range, or (no index) every cell",
		Args:  cobra.RangeArgs(2, 3), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"register": args[1]}
			if len(args) == 3 {
				if err := cellRange(args[2], body); err != nil {
					return err
				}
			}
			var out json.RawMessage
			if err := api().Do("POST", "/v1/cubes/"+url.PathEscape(args[0])+"/actions/register_reset", body, &out); err != nil {
				return err
			}
			return show(os.Stdout, out, nil)
		},
	}
	return []*cobra.Command{add, del, setDefault, dump, counter, info, regRead, regWrite, regReset}
}

// cellRange puts INDEX or FIRST-LAST into a register_read/write/reset body.
func cellRange(arg string, body map[string]any) error {
	first, last, isRange := strings.Cut(arg, "-")
	lo, err := strconv.ParseUint(first, 0, 32)
	if err != nil {
		return fmt.Errorf("bad index %q (want N or FIRST-LAST)", arg)
	}
	body["index"] = lo
	if isRange {
		hi, err := strconv.ParseUint(last, 0, 32)
		if err != nil {
			return fmt.Errorf("bad index range %q (want FIRST-LAST)", arg)
		}
		body["last"] = hi
	}
	return nil
}

// nonZeroCells lists the non-zero cells of a register (the registers view).
func nonZeroCells(cubeName, reg string) error {
	var rows []map[string]any
	if err := api().Do("GET", "/v1/cubes/"+url.PathEscape(cubeName)+"/views/registers", nil, &rows); err != nil {
		return err
	}
	kept := rows[:0]
	for _, r := range rows {
		if n, _ := r["register"].(string); n == reg || strings.HasSuffix(n, "."+reg) {
			kept = append(kept, r)
		}
	}
	return show(os.Stdout, kept, nil)
}

func kv(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range sortedMapKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}
