// Command edgenf is the edgenf CLI: imperative verbs for cubes, ports, peers,
// attachments, tables and counters, and declarative `apply -f`.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/tlsauth"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

type globals struct {
	socket, server, token, output string
	tls                           tlsauth.ClientFiles
}

var g globals

func main() {
	root := newRoot()
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		var ae *client.Error
		if errors.As(err, &ae) && ae.Code == 404 {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "edgenf",
		Short:         "Network functions in the Linux kernel (eBPF), chained into service chains",
		Long:          "edgenf drives edgenfd: cubes (NF instances), their ports and peers, transparent attachments,\nNF tables and counters. See `edgenf types` for the NF types and their models.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.socket, "socket", envOr("EDGENF_SOCKET", client.DefaultSocket), "edgenfd unix socket ($EDGENF_SOCKET)")
	pf.StringVar(&g.server, "server", os.Getenv("EDGENF_SERVER"), "edgenfd TCP URL instead of the socket ($EDGENF_SERVER)")
	pf.StringVar(&g.token, "token", os.Getenv("EDGENF_TOKEN"), "bearer token for --server ($EDGENF_TOKEN)")
	pf.StringVar(&g.tls.CA, "ca", os.Getenv("EDGENF_CA"), "CA certificate (PEM) of an https --server ($EDGENF_CA; default: the system's roots)")
	pf.StringVar(&g.tls.Cert, "cert", os.Getenv("EDGENF_CERT"), "client certificate (PEM) for an https --server ($EDGENF_CERT)")
	pf.StringVar(&g.tls.Key, "key", os.Getenv("EDGENF_KEY"), "private key (PEM) of --cert ($EDGENF_KEY)")
	pf.StringVarP(&g.output, "output", "o", "table", "output format: table, json or yaml")
	root.RegisterFlagCompletionFunc("output", fixedCompletion("table", "json", "yaml"))
	root.AddCommand(cubeCmd(), portCmd(), peerCmd(), unpeerCmd(), attachCmd(), detachCmd(),
		tableCmd(), viewCmd(), actionCmd(), statsCmd(), topCmd(), getCmd(), describeCmd(), deleteCmd(),
		applyCmd(), typesCmd(), injectCmd(), openapiCmd(), p4Cmd(), tenantCmd(), sliceCmd(), doctorCmd(), genDocsCmd(), endpointCmd(), estimateCmd(),
		captureCmd()) // capture.go
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command group (cube, tenant, slice,
// ...) fail on a word that is none of its subcommands: cobra only does so
// for the root, and below it printed the group's help and exited 0, so a
// script's "edgenf tenant shwo red" passed as if it had run.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if cmd == cmd.Root() || !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		err := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			err += " (did you mean " + strings.Join(s, " or ") + "?)"
		}
		return errors.New(err)
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	cmd.DisableFlagsInUseLine = true // its flags are its subcommands'
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// api is the client of the daemon the flags name (bad TLS files or URL:
// every call fails with that error).
func api() *client.Client {
	c, err := client.Open(client.Options{Socket: g.socket, Server: g.server, Token: g.token, TLS: g.tls})
	if err != nil {
		return client.Failing(err)
	}
	return c
}

func fixedCompletion(vals ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return vals, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeCubes completes cube names from the running daemon.
func completeCubes(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var cubes []struct {
		Name string `json:"name"`
	}
	if api().Do("GET", "/v1/cubes", nil, &cubes) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, c := range cubes {
		out = append(out, c.Name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// --- output ---

// show prints v (JSON-shaped) in the chosen format; rows renders the table
// form (nil: generic).
func show(w io.Writer, v any, table func(tw *tabwriter.Writer)) error {
	switch g.output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		generic, err := toGeneric(v)
		if err != nil {
			return err
		}
		return yaml.NewEncoder(w).Encode(generic)
	case "table", "":
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		if table != nil {
			table(tw)
		} else {
			genericTable(tw, v)
		}
		return tw.Flush()
	}
	return fmt.Errorf("unknown output format %q (want table, json or yaml)", g.output)
}

// toGeneric turns any JSON-marshalable value into maps and slices. Whole
// numbers become int64 or uint64, digit for digit (a float64 printed a
// 64-bit SEID as 1.1546480362259272e+19), others float64.
func toGeneric(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return exactNumbers(out), nil
}

// exactNumbers replaces the json.Numbers in v with int64, uint64 or
// float64 values.
func exactNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(x.String(), 10, 64); err == nil {
			return u
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = exactNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = exactNumbers(x[k])
		}
	}
	return v
}

// genericTable prints a list of objects as columns (keys in first-seen order),
// or an object as key/value lines.
func genericTable(tw *tabwriter.Writer, v any) {
	gv, err := toGeneric(v)
	if err != nil {
		fmt.Fprintln(tw, err)
		return
	}
	switch x := gv.(type) {
	case []any:
		cols := columnOrder(v)
		if len(cols) == 0 {
			for _, row := range x {
				fmt.Fprintln(tw, cell(row))
			}
			return
		}
		fmt.Fprintln(tw, strings.ToUpper(strings.Join(cols, "\t")))
		for _, row := range x {
			m, _ := row.(map[string]any)
			vals := make([]string, len(cols))
			for i, c := range cols {
				vals[i] = cell(m[c])
			}
			fmt.Fprintln(tw, strings.Join(vals, "\t"))
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(tw, "%s:\t%s\n", k, cell(x[k]))
		}
	default:
		fmt.Fprintln(tw, cell(x))
	}
}

// columnOrder lists the keys of a JSON array's objects in the order the API
// wrote them (the model's field order), first-seen first.
func columnOrder(v any) []string {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var cols []string
	seen := map[string]bool{}
	depth := 0
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return cols
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				depth++
				expectKey = t == '{' && depth == 2
			case '}', ']':
				depth--
				expectKey = depth == 2
			}
			continue
		case string:
			if expectKey && depth == 2 {
				if !seen[t] {
					seen[t] = true
					cols = append(cols, t)
				}
				expectKey = false
				continue
			}
		}
		if depth == 2 {
			expectKey = true
		}
	}
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		return x
	case int64, uint64, float64:
		return fmt.Sprint(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = cell(e)
		}
		return strings.Join(parts, ",")
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}
