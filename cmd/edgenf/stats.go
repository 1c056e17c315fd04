package main

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

type counters struct {
	RxPackets   uint64 `json:"rx_packets"`
	RxBytes     uint64 `json:"rx_bytes"`
	TxPackets   uint64 `json:"tx_packets"`
	TxBytes     uint64 `json:"tx_bytes"`
	DropPackets uint64 `json:"drop_packets"`
	DropBytes   uint64 `json:"drop_bytes"`
	PuntPackets uint64 `json:"punt_packets"`
	// punts over the cube's punt budget: never sent
	PuntRateDrops uint64 `json:"punt_rate_drops"`
}

type cubeStats struct {
	Cube  string `json:"cube"`
	Ports []struct {
		Port     string `json:"port"`
		Index    int    `json:"index"`
		PeerDown string `json:"peer_down,omitempty"`
		counters
	} `json:"ports"`
	Total      counters            `json:"total"`
	Directions map[string]counters `json:"directions"`
	SlowCopies uint64              `json:"slow_copies"`
}

// rows flattens a cube's counters into (row name, counters).
func (s *cubeStats) rows() [][2]any {
	var out [][2]any
	for _, p := range s.Ports {
		out = append(out, [2]any{p.Port, p.counters})
	}
	for _, d := range []string{"ingress", "egress"} {
		if c, ok := s.Directions[d]; ok {
			out = append(out, [2]any{d, c})
		}
	}
	return out
}

func fetchStats(names []string) ([]cubeStats, error) {
	if len(names) == 0 {
		var cubes []cubeView
		if err := api().Do("GET", "/v1/cubes", nil, &cubes); err != nil {
			return nil, err
		}
		for _, c := range cubes {
			names = append(names, c.Name)
		}
	}
	out := make([]cubeStats, 0, len(names))
	for _, n := range names {
		var s cubeStats
		if err := api().Do("GET", v1("cubes", n, "stats"), nil, &s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// topStats reads the counters of every cube the caller may see in one
// request (/v1/stats, read like a scrape: however many cubes, one round
// trip per refresh), or of the cubes named.
func topStats(names []string) ([]cubeStats, error) {
	var all struct {
		Cubes []cubeStats `json:"cubes"`
	}
	if err := api().Do("GET", "/v1/stats", nil, &all); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return all.Cubes, nil
	}
	byName := map[string]cubeStats{}
	for _, c := range all.Cubes {
		byName[c.Cube] = c
	}
	out := make([]cubeStats, 0, len(names))
	for _, n := range names {
		c, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("no cube named %q", n)
		}
		out = append(out, c)
	}
	return out, nil
}

func statsCmd() *cobra.Command {
	c := &cobra.Command{
		Use: "stats [CUBE ...]", Short: "Packet, byte, drop and punt counters per cube port",
		ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			all, err := fetchStats(args)
			if err != nil {
				return err
			}
			return show(os.Stdout, all, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "CUBE\tPORT\tRX PKTS\tRX BYTES\tTX PKTS\tTX BYTES\tDROPS\tPUNTS\tPUNTS OVER BUDGET")
				for _, s := range all {
					for _, r := range s.rows() {
						c := r[1].(counters)
						fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", s.Cube, r[0], c.RxPackets, c.RxBytes, c.TxPackets, c.TxBytes, c.DropPackets, c.PuntPackets, c.PuntRateDrops)
					}
					for _, p := range s.Ports {
						if p.PeerDown != "" { // beside the table, not in it: scripts read its columns
							fmt.Fprintf(os.Stderr, "%s:%s: peering down: %s\n", s.Cube, p.Port, p.PeerDown)
						}
					}
				}
			})
		},
	}
	reset := &cobra.Command{
		Use: "reset CUBE", Short: "Zero a cube's counters", Args: cobra.ExactArgs(1), ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			return api().Do("DELETE", v1("cubes", args[0], "stats"), nil, nil)
		},
	}
	iface := &cobra.Command{
		Use: "iface INTERFACE", Short: "Frames edgenf took in on a Linux interface, per hook and direction", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var st map[string]counters
			if err := api().Do("GET", v1("interfaces", args[0], "stats"), nil, &st); err != nil {
				return err
			}
			return show(os.Stdout, st, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "INTERFACE\tHOOK\tRX PKTS\tRX BYTES")
				for _, k := range slices.Sorted(maps.Keys(st)) {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", args[0], k, st[k].RxPackets, st[k].RxBytes)
				}
			})
		},
	}
	c.AddCommand(reset, iface)
	return c
}

func topCmd() *cobra.Command {
	var interval time.Duration
	var count int
	var bySlice bool
	c := &cobra.Command{
		Use:   "top [CUBE ...]",
		Short: "Live packet and bit rates per cube port, or per slice with --slices (Ctrl-C to stop)",
		Long: "Live rates from the daemon's counters, refreshed every --interval: per cube port (receive,\n" +
			"send, drop), or with --slices per slice of the slicers named (default: every slicer): frames\n" +
			"classified in and back from its chain, policer and shaper drops, and what waits in its egress\n" +
			"queues.",
		Example:           "  edgenf top r1 r2\n  edgenf top --slices --interval 2s",
		ValidArgsFunction: completeCubes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if bySlice {
				return topLoop(interval, count, func() (any, error) { return sliceRates(args) }, renderSliceRates)
			}
			return topLoop(interval, count, func() (any, error) { return topStats(args) }, renderPortRates)
		},
	}
	c.Flags().DurationVar(&interval, "interval", time.Second, "refresh interval")
	c.Flags().IntVar(&count, "count", 0, "stop after this many refreshes (0: run until interrupted)")
	c.Flags().BoolVar(&bySlice, "slices", false, "rates per slice of the slicers named (default: every slicer)")
	return c
}

// topLoop takes a snapshot every interval (count times; 0: until
// interrupted) and renders the rates between it and the previous one.
func topLoop(interval time.Duration, count int, snap func() (any, error), render func(tw *tabwriter.Writer, prev, cur any, dt float64)) error {
	prev, err := snap()
	if err != nil {
		return err
	}
	last := time.Now()
	for i := 0; count == 0 || i < count; i++ {
		time.Sleep(interval)
		cur, err := snap()
		if err != nil {
			return err
		}
		now := time.Now()
		if isTerminal() {
			fmt.Print("\033[H\033[2J")
		}
		fmt.Printf("edgenf top — %s, every %s\n\n", now.Format("15:04:05"), interval)
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		render(tw, prev, cur, now.Sub(last).Seconds())
		tw.Flush()
		prev, last = cur, now
	}
	return nil
}

func renderPortRates(tw *tabwriter.Writer, prevAny, curAny any, dt float64) {
	prev, cur := prevAny.([]cubeStats), curAny.([]cubeStats)
	fmt.Fprintln(tw, "CUBE\tPORT\tRX PPS\tRX MBIT/S\tTX PPS\tTX MBIT/S\tDROP PPS")
	old := map[string]counters{}
	for _, s := range prev {
		for _, r := range s.rows() {
			old[s.Cube+"/"+r[0].(string)] = r[1].(counters)
		}
	}
	rate := func(a, b uint64) float64 { return float64(a-b) / dt }
	for _, s := range cur {
		for _, r := range s.rows() {
			c, o := r[1].(counters), old[s.Cube+"/"+r[0].(string)]
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.2f\t%.0f\t%.2f\t%.0f\n", s.Cube, r[0],
				rate(c.RxPackets, o.RxPackets), rate(c.RxBytes, o.RxBytes)*8/1e6,
				rate(c.TxPackets, o.TxPackets), rate(c.TxBytes, o.TxBytes)*8/1e6,
				rate(c.DropPackets, o.DropPackets))
		}
	}
}

// sliceCounters is one slice's counters at one moment, for top --slices.
type sliceCounters struct {
	Slicer, Slice, Tenant string
	In, InBytes           uint64
	Ret, RetBytes         uint64
	Policed, Shaped       uint64
	Queued                uint64 // bytes in its egress classes' queues now
}

// sliceRates reads every slice's counters from the status view of each
// slicer named (default: every slicer).
func sliceRates(names []string) ([]sliceCounters, error) {
	if len(names) == 0 {
		var err error
		if names, err = slicers(""); err != nil {
			return nil, err
		}
	}
	var out []sliceCounters
	for _, c := range names {
		var st slicerStatus
		if err := api().Do("GET", "/v1/cubes/"+url.PathEscape(c)+"/views/status", nil, &st); err != nil {
			return nil, fmt.Errorf("slicer %s: %w", c, err)
		}
		for _, s := range st.Slices {
			sc := sliceCounters{Slicer: c, Slice: s.Name, Tenant: s.Tenant, In: s.InPackets, InBytes: s.InBytes,
				Ret: s.ReturnPackets, RetBytes: s.ReturnBytes, Policed: s.PolicePackets}
			for _, e := range s.Egress {
				sc.Shaped += e.Drops
				sc.Queued += e.Backlog
			}
			out = append(out, sc)
		}
	}
	return out, nil
}

func renderSliceRates(tw *tabwriter.Writer, prevAny, curAny any, dt float64) {
	prev, cur := prevAny.([]sliceCounters), curAny.([]sliceCounters)
	fmt.Fprintln(tw, "SLICER\tSLICE\tTENANT\tIN PPS\tIN MBIT/S\tRETURN PPS\tRETURN MBIT/S\tPOLICED PPS\tSHAPER DROP PPS\tQUEUED BYTES")
	old := map[[2]string]sliceCounters{}
	for _, s := range prev {
		old[[2]string{s.Slicer, s.Slice}] = s
	}
	rate := func(a, b uint64) float64 {
		if a < b { // the slice was deleted and made again meanwhile
			return 0
		}
		return float64(a-b) / dt
	}
	for _, s := range cur {
		o, ok := old[[2]string{s.Slicer, s.Slice}]
		if !ok {
			o = s // new since the last refresh: rates from the next one
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%.2f\t%.0f\t%.2f\t%.0f\t%.0f\t%d\n", s.Slicer, s.Slice, dash(s.Tenant),
			rate(s.In, o.In), rate(s.InBytes, o.InBytes)*8/1e6, rate(s.Ret, o.Ret), rate(s.RetBytes, o.RetBytes)*8/1e6,
			rate(s.Policed, o.Policed), rate(s.Shaped, o.Shaped), s.Queued)
	}
}

func isTerminal() bool {
	fi, err := os.Stdout.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
