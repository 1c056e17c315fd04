package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// The slow path of p4 cubes: digests, packet-in/packet-out, learned entries.

type p4Event struct {
	Seq    uint64            `json:"seq"`
	Time   time.Time         `json:"time"`
	Kind   string            `json:"kind"`
	Port   int               `json:"port"`
	Digest string            `json:"digest,omitempty"`
	ID     uint32            `json:"id,omitempty"`
	Fields map[string]string `json:"fields,omitempty"`
	Frame  string            `json:"frame,omitempty"`
	Length int               `json:"length,omitempty"`
}

func eventRow(tw *tabwriter.Writer, e p4Event) {
	what := e.Digest
	switch e.Kind {
	case "packet_in":
		what = fmt.Sprintf("%d bytes", e.Length)
	case "idle_timeout":
		what = e.Fields["table"]
	}
	fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", e.Seq, e.Time.Format("15:04:05.000"), e.Kind, e.Port, what, kv(e.Fields))
}

const eventHeader = "SEQ\tTIME\tKIND\tPORT\tDIGEST\tFIELDS"

func cubePath(cube, rest string) string { return "/v1/cubes/" + url.PathEscape(cube) + rest }

func p4SlowPathCmds() []*cobra.Command {
	digests := &cobra.Command{
		Use: "digests CUBE", Short: "List a p4 cube's recent digests (decoded)",
		Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var rows []p4Event
			if err := api().Do("GET", cubePath(args[0], "/views/digests"), nil, &rows); err != nil {
				return err
			}
			return show(os.Stdout, rows, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, eventHeader)
				for _, r := range rows {
					eventRow(tw, r)
				}
			})
		},
	}
	var count int
	var wait time.Duration
	var kind string
	var from uint64
	watch := &cobra.Command{
		Use:   "digest-watch CUBE",
		Short: "Stream a p4 cube's digests (and packet-ins with --kind any) as they arrive",
		Long: "Stream digests as they arrive (a long poll of the cube's poll action). With -o json,\n" +
			"one JSON object per line. Ends after --count events or --timeout, or on Ctrl-C.",
		Example: "  edgenf p4 digest-watch sw1\n  edgenf p4 digest-watch sw1 --count 3 --timeout 10s -o json",
		Args:    cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			k := kind
			switch kind {
			case "any", "all":
				k = ""
			case "digest", "packet_in", "idle_timeout":
			default:
				return fmt.Errorf("--kind %q: want digest, packet_in, idle_timeout or any", kind)
			}
			after := from
			if !cmd.Flags().Changed("from") {
				// only what arrives from now on
				var st struct {
					NextSeq uint64 `json:"next_seq"`
				}
				if err := api().Do("GET", cubePath(args[0], "/views/slowpath"), nil, &st); err != nil {
					return err
				}
				if st.NextSeq > 0 {
					after = st.NextSeq - 1
				}
			}
			var deadline time.Time
			if wait > 0 {
				deadline = time.Now().Add(wait)
			}
			stop := make(chan os.Signal, 1)
			signal.Notify(stop, os.Interrupt)
			defer signal.Stop(stop)
			tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
			if g.output == "table" || g.output == "" {
				fmt.Fprintln(tw, eventHeader)
				tw.Flush()
			}
			enc := json.NewEncoder(os.Stdout)
			n := 0
			for count == 0 || n < count {
				ms := 10000
				if !deadline.IsZero() {
					left := time.Until(deadline)
					if left <= 0 {
						break
					}
					ms = min(ms, int(left.Milliseconds())+1)
				}
				select {
				case <-stop:
					return nil
				default:
				}
				var res struct {
					Events []p4Event `json:"events"`
					Next   uint64    `json:"next"`
					Missed uint64    `json:"missed"`
				}
				body := map[string]any{"after": after, "kind": k, "timeout_ms": ms}
				if count > 0 {
					body["max"] = count - n
				}
				if err := api().Do("POST", cubePath(args[0], "/actions/poll"), body, &res); err != nil {
					return err
				}
				if res.Missed > 0 {
					fmt.Fprintf(os.Stderr, "edgenf: %d events were overwritten before they could be read\n", res.Missed)
				}
				for _, e := range res.Events {
					if g.output == "json" {
						enc.Encode(e)
					} else {
						eventRow(tw, e)
					}
					n++
				}
				tw.Flush()
				after = res.Next
			}
			if count > 0 && n < count {
				return fmt.Errorf("%d of %d events before the timeout", n, count)
			}
			return nil
		},
	}
	watch.Flags().IntVar(&count, "count", 0, "stop after this many events (0: no limit)")
	watch.Flags().DurationVar(&wait, "timeout", 0, "stop after this long (0: no limit)")
	watch.Flags().StringVar(&kind, "kind", "digest", "digest, packet_in, idle_timeout or any")
	watch.Flags().Uint64Var(&from, "from", 0, "start after this seq (default: only new events); 0 with --from: every buffered event")

	packetIns := &cobra.Command{
		Use: "packet-in CUBE", Short: "List the recent packets a p4 cube sent to its CPU port (packet_in metadata decoded)",
		Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var rows []p4Event
			if err := api().Do("GET", cubePath(args[0], "/views/packet_ins"), nil, &rows); err != nil {
				return err
			}
			return show(os.Stdout, rows, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "SEQ\tTIME\tPORT\tMETADATA\tLENGTH\tFRAME")
				for _, r := range rows {
					f := r.Frame
					if len(f) > 64 {
						f = f[:64] + "..."
					}
					fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%s\n", r.Seq, r.Time.Format("15:04:05.000"), r.Port, kv(r.Fields), r.Length, f)
				}
			})
		},
	}
	packetOut := &cobra.Command{
		Use:   "packet-out CUBE FRAME-HEX [FIELD=VALUE...]",
		Short: "Inject a frame at a p4 cube's CPU port with packet_out header metadata",
		Long: "The program's @controller_header(\"packet_out\") header is built from FIELD=VALUE\n" +
			"(fields left out are 0) and put in front of the frame, which enters the program\n" +
			"with ingress_port = the CPU port, as a P4Runtime packet-out.",
		Example: "  edgenf p4 packet-out sw1 ffffffffffff0200000000010806... egress_port=2",
		Args:    cobra.MinimumNArgs(2), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			md := map[string]string{}
			for _, a := range args[2:] {
				k, v, ok := strings.Cut(a, "=")
				if !ok || k == "" {
					return fmt.Errorf("metadata %q: want FIELD=VALUE", a)
				}
				md[k] = v
			}
			body := map[string]any{"frame": args[1]}
			if len(md) > 0 {
				body["metadata"] = md
			}
			var out json.RawMessage
			if err := api().Do("POST", cubePath(args[0], "/actions/packet_out"), body, &out); err != nil {
				return err
			}
			return show(os.Stdout, out, nil)
		},
	}
	learned := &cobra.Command{
		Use: "learned CUBE", Short: "List the table entries a p4 cube learned from digests",
		Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var rows []struct {
				Table   string            `json:"table"`
				Match   map[string]string `json:"match"`
				Action  string            `json:"action"`
				Params  map[string]string `json:"params"`
				Digest  string            `json:"digest"`
				Learned time.Time         `json:"learned"`
			}
			if err := api().Do("GET", cubePath(args[0], "/views/learned"), nil, &rows); err != nil {
				return err
			}
			return show(os.Stdout, rows, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "TABLE\tMATCH\tACTION\tPARAMS\tDIGEST\tLEARNED")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Table, kv(r.Match), r.Action, kv(r.Params), r.Digest, r.Learned.Format("15:04:05"))
				}
			})
		},
	}
	stats := &cobra.Command{
		Use: "slowpath CUBE", Short: "Show a p4 cube's slow-path counters (digests, logs, packet-ins: sent, lost, learned)",
		Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			var st map[string]any
			if err := api().Do("GET", cubePath(args[0], "/views/slowpath"), nil, &st); err != nil {
				return err
			}
			return show(os.Stdout, st, func(tw *tabwriter.Writer) {
				keys := make([]string, 0, len(st))
				for k := range st {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				fmt.Fprintln(tw, "COUNTER\tVALUE")
				for _, k := range keys {
					fmt.Fprintf(tw, "%s\t%v\n", k, st[k])
				}
			})
		},
	}
	return []*cobra.Command{digests, watch, packetIns, packetOut, learned, stats}
}
