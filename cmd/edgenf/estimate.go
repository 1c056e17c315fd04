package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/estimate/calibrate"
	"github.com/edgenf/edgenf/internal/estimate/p4path"
	_ "github.com/edgenf/edgenf/internal/nf/all" // NF types and their cost models
	"github.com/edgenf/edgenf/internal/p4"
)

// estimateCmd estimates per-packet costs locally, without the daemon.
func estimateCmd() *cobra.Command {
	var (
		hook     string
		profiles []string
		pathSpec string
		all      bool
		entries  []string
		file     string
		defines  []string
		includes []string
		frame    int
	)
	c := &cobra.Command{
		Use:   "estimate [PROGRAM.p4 | -f TOPOLOGY]",
		Short: "Estimate the per-packet cost of a P4 program or of a topology's chains",
		Long: "Estimates what one packet costs, in ns on this machine (a profile made by `edgenf estimate calibrate`,\n" +
			"or the built-in one), and the packets per second one core sustains at that cost.\n\n" +
			"For a P4 program: every path through the parser and the controls (parser states × table hit/miss ×\n" +
			"action choice × undecided branches); the cheapest, the typical and the most expensive path, and the\n" +
			"constructs that dominate each. Tables are assumed to hold one entry unless --entries says otherwise,\n" +
			"frames to be of the smallest size (60 bytes) unless --frame-bytes says otherwise (only a checksum\n" +
			"with payload depends on it: it sums every byte after the parsed headers).\n\n" +
			"For a topology file (as `edgenf apply` takes): every chain from an interface through cubes, hop by hop.\n\n" +
			"Costs are the eBPF processing of a packet as BPF_PROG_TEST_RUN measures it; the driver and the\n" +
			"delivery of redirected frames are extra, so packets per second are an upper bound.",
		Example: "  edgenf estimate examples/p4/l3router.p4\n" +
			"  edgenf estimate examples/p4/l3router.p4 --entries ipv4_lpm=10000 --path ethernet,ipv4,ipv4_lpm=hit,port_mac=hit\n" +
			"  edgenf estimate -f topology.yaml\n" +
			"  edgenf estimate calibrate",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			switch {
			case file != "" && len(args) > 0:
				return fmt.Errorf("give a P4 program or -f TOPOLOGY, not both")
			case file != "":
				// the cubes of a topology say their hooks, P4 cubes carry their entries
				for _, name := range []string{"hook", "path", "all", "entries", "define", "include", "frame-bytes"} {
					if cmd.Flags().Changed(name) {
						return fmt.Errorf("--%s is for a P4 program, not a topology file (-f)", name)
					}
				}
				return estimateTopology(w, file, profiles)
			case len(args) == 1:
				return estimateProgram(w, args[0], programOptions{hook: datapath.Hook(hook), profiles: profiles,
					path: pathSpec, all: all, entries: entries, defines: defines, includes: includes, frameBytes: frame})
			}
			return fmt.Errorf("give a P4 program or -f TOPOLOGY (edgenf estimate --help)")
		},
	}
	f := c.Flags()
	f.StringVar(&hook, "hook", "xdp", "hook the program runs at: xdp or tc")
	f.StringArrayVar(&profiles, "profile", nil, "profile file (default: "+estimate.DefaultDir+"/<hook>.json, else the built-in one); repeat for a topology using both hooks")
	f.StringVar(&pathSpec, "path", "", "follow one path: its number, or headers extracted and table outcomes, e.g. ethernet,ipv4,ipv4_lpm=hit,port_mac=set_smac")
	f.BoolVar(&all, "all", false, "list every path")
	f.StringArrayVar(&entries, "entries", nil, "TABLE=N: the number of entries a table holds (repeatable; N alone: every table)")
	f.IntVar(&frame, "frame-bytes", p4path.DefaultFrameBytes, "size of the frames priced (14 to 9000 bytes): the payload a checksum *_with_payload sums")
	f.StringVarP(&file, "file", "f", "", "topology file (YAML or JSON): estimate its chains")
	f.StringArrayVarP(&defines, "define", "D", nil, "preprocessor macro NAME[=value] (repeatable)")
	f.StringArrayVarP(&includes, "include", "I", nil, "directory searched by #include (repeatable)")
	c.RegisterFlagCompletionFunc("hook", fixedCompletion("xdp", "tc"))
	c.AddCommand(calibrateCmd())
	return c
}

func calibrateCmd() *cobra.Command {
	var (
		hook   string
		out    string
		short  bool
		rounds int
		repeat int
		quiet  bool
	)
	c := &cobra.Command{
		Use:   "calibrate",
		Short: "Measure this machine's costs and write a profile",
		Long: "Runs generated P4 micro-programs (headers parsed and modified, tables of each kind by key width,\n" +
			"entries, hit and miss, actions, every extern, header add and remove, checksums, deparser bytes), the\n" +
			"framework's hops (entry, tail calls, redirect, transparent stacks) and every NF type's calibration\n" +
			"cases through BPF_PROG_TEST_RUN at the hook, in interleaved rounds; fits the cost model and writes\n" +
			"the profile (kernel, CPU, hook and date recorded). Takes one to two minutes; --short takes seconds\n" +
			"(anchors measured, the rest scaled from the built-in profile). Needs root. Measure on a quiet machine.",
		Example: "  edgenf estimate calibrate                 # both hooks, into " + estimate.DefaultDir + "\n" +
			"  edgenf estimate calibrate --hook xdp -O /tmp/xdp.json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			hooks := []datapath.Hook{datapath.XDP, datapath.TC}
			switch hook {
			case "all", "":
			case "xdp", "tc":
				hooks = []datapath.Hook{datapath.Hook(hook)}
			default:
				return fmt.Errorf("--hook %s: want xdp, tc or all", hook)
			}
			if out != "" && len(hooks) > 1 {
				return fmt.Errorf("-O names one file: give --hook xdp or tc with it")
			}
			if os.Geteuid() != 0 {
				return fmt.Errorf("calibrating loads eBPF programs: run as root")
			}
			// SIGTERM too: an interrupted calibration removes its pins
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logf := func(f string, a ...any) {
				if !quiet {
					fmt.Fprintf(cmd.ErrOrStderr(), f+"\n", a...)
				}
			}
			for _, h := range hooks {
				p, err := calibrate.Run(ctx, calibrate.Options{Hook: h, Short: short, Rounds: rounds, Repeat: repeat, Log: logf})
				if err != nil {
					return fmt.Errorf("calibrating %s: %w", h, err)
				}
				path := out
				if path == "" {
					path = estimate.DefaultPath(h)
				}
				if err := p.Save(path); err != nil {
					return err
				}
				p.Source = path
				writeCalibration(cmd.OutOrStdout(), p)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&hook, "hook", "all", "xdp, tc or all")
	f.StringVarP(&out, "out", "O", "", "profile file to write (default: "+estimate.DefaultDir+"/<hook>.json)")
	f.BoolVar(&short, "short", false, "measure a few anchors, scale the built-in profile (seconds)")
	f.IntVar(&rounds, "rounds", 0, "interleaved rounds (default 15, --short 5)")
	f.IntVar(&repeat, "repeat", 0, "runs per measurement (default 20000, --short 5000)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr")
	c.RegisterFlagCompletionFunc("hook", fixedCompletion("xdp", "tc", "all"))
	return c
}

// writeCalibration summarises a new profile: where it went, what was
// measured, how well the model fits the measurements.
func writeCalibration(w io.Writer, p *estimate.Profile) {
	fmt.Fprintf(w, "wrote %s\n", p.Summary())
	fmt.Fprintf(w, "took %s; load average %s; %d rounds of %d runs\n", p.Took, p.Load, p.Rounds, p.Repeat)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measured ns\tmodel ns\terror\t\tprogram\t")
	var worst float64
	for _, m := range p.Measurements {
		e := "–"
		if m.Model != 0 && m.NS > 0 {
			r := (m.Model - m.NS) / m.NS
			e = fmt.Sprintf("%+.1f%%", 100*r)
			if abs(r) > worst {
				worst = abs(r)
			}
		}
		fmt.Fprintf(tw, "%.1f\t%.1f\t%s\t\t%s\t\n", m.NS, m.Model, e, m.Name)
	}
	tw.Flush()
	fmt.Fprintf(w, "largest error of the fit: %.1f%%\n", 100*worst)
	fmt.Fprintln(w, "framework:")
	for _, t := range estimate.FrameworkTerms {
		fmt.Fprintf(w, "  %-16s %7.1f ns  %s\n", t.Name, p.Costs[t.Name], t.Doc)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// resolveProfiles loads the profile of each hook: the files given (their
// hook decides which), else the machine's calibrated profile, else the
// built-in one; with notes on what was chosen.
func resolveProfiles(files []string, hooks []datapath.Hook) (map[datapath.Hook]*estimate.Profile, []string, error) {
	given := map[datapath.Hook]string{}
	for _, f := range files {
		p, err := estimate.Load(f)
		if os.IsNotExist(err) || (err != nil && strings.Contains(err.Error(), "no such file")) {
			// missing: the fallback below says so, for every hook asked
			for _, h := range hooks {
				if _, ok := given[h]; !ok {
					given[h] = f
				}
			}
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if _, dup := given[p.Hook]; dup && given[p.Hook] != f {
			return nil, nil, fmt.Errorf("two profiles for hook %s: %s and %s", p.Hook, given[p.Hook], f)
		}
		given[p.Hook] = f
	}
	out := map[datapath.Hook]*estimate.Profile{}
	var all []string
	for _, h := range hooks {
		p, notes, err := estimate.Resolve(given[h], h)
		if err != nil {
			return nil, nil, err
		}
		p, more := p.WithDefaults()
		all = append(append(all, notes...), more...)
		out[h] = p
	}
	return out, all, nil
}

type programOptions struct {
	hook              datapath.Hook
	profiles          []string
	path              string
	all               bool
	entries           []string
	defines, includes []string
	frameBytes        int
}

func parseEntries(specs []string) (map[string]int, int, error) {
	out := map[string]int{}
	def := 0
	for _, s := range specs {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			k, v = "", s
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, 0, fmt.Errorf("--entries %s: want TABLE=N or N, N a number of entries", s)
		}
		if k == "" {
			def = n
			continue
		}
		out[k] = n
	}
	return out, def, nil
}

func estimateProgram(w io.Writer, file string, o programOptions) error {
	if o.hook != datapath.XDP && o.hook != datapath.TC {
		return fmt.Errorf("--hook %s: want xdp or tc", o.hook)
	}
	entries, def, err := parseEntries(o.entries)
	if err != nil {
		return err
	}
	if o.frameBytes == 0 {
		o.frameBytes = p4path.DefaultFrameBytes
	}
	if o.frameBytes < 14 || o.frameBytes > 9000 {
		return fmt.Errorf("--frame-bytes %d: want 14 to 9000 bytes (an Ethernet frame, jumbo at most)", o.frameBytes)
	}
	opt, err := p4.FromFile(file)
	if err != nil {
		return err
	}
	opt.IncludeDirs = append(opt.IncludeDirs, o.includes...)
	opt.Defines = map[string]string{}
	for _, d := range o.defines {
		k, v, _ := strings.Cut(d, "=")
		opt.Defines[k] = v
	}
	prog, err := p4path.Check(opt)
	if err != nil {
		return err
	}
	pr, err := p4path.Enumerate(prog, p4path.Options{Entries: entries, DefaultEntries: def, FrameBytes: o.frameBytes})
	if err != nil {
		return err
	}
	for t := range entries {
		found := false
		for _, x := range pr.Tables {
			if x.Name == t || strings.HasSuffix(x.Name, "."+t) {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("--entries %s: the program has no table %q", t, t)
		}
	}
	profs, notes, err := resolveProfiles(o.profiles, []datapath.Hook{o.hook})
	if err != nil {
		return err
	}
	p := profs[o.hook]
	priced := pr.Price(p)
	var sel []p4path.Priced
	if o.path != "" {
		paths, err := pr.Select(o.path)
		if err != nil {
			return err
		}
		for _, path := range paths {
			sel = append(sel, priced[path.ID-1])
		}
	}
	rep := programReport{File: file, Hook: o.hook, Profile: p.Summary(), Notes: notes, Paths: len(pr.Paths), Truncated: pr.Truncated, Tables: pr.Tables}
	s := p4path.Summarise(priced)
	rep.Cheapest, rep.Typical, rep.Dearest = reportPath(s.Cheapest), reportPath(s.Typical), reportPath(s.Dearest)
	for _, x := range sel {
		rep.Selected = append(rep.Selected, reportPath(x))
	}
	if o.all {
		for _, x := range priced {
			rep.All = append(rep.All, reportPath(x))
		}
	}
	return show(w, rep, func(tw *tabwriter.Writer) { rep.write(tw) })
}

type programReport struct {
	File      string         `json:"file"`
	Hook      datapath.Hook  `json:"hook"`
	Profile   string         `json:"profile"`
	Notes     []string       `json:"notes,omitempty"`
	Paths     int            `json:"paths"`
	Truncated bool           `json:"truncated,omitempty"`
	Tables    []p4path.Table `json:"tables"`
	Cheapest  pathReport     `json:"cheapest"`
	Typical   pathReport     `json:"typical"`
	Dearest   pathReport     `json:"most_expensive"`
	Selected  []pathReport   `json:"selected,omitempty"`
	All       []pathReport   `json:"all,omitempty"`
}

type pathReport struct {
	ID       int                `json:"id"`
	Path     string             `json:"path"`
	NS       float64            `json:"ns"`
	PPS      float64            `json:"pps"`
	Dominant []estimate.Item    `json:"dominant"`
	Cost     estimate.Breakdown `json:"cost"`
}

func reportPath(p p4path.Priced) pathReport {
	return pathReport{ID: p.ID, Path: p.Describe(), NS: p.Cost.Total, PPS: estimate.PPS(p.Cost.Total), Dominant: p.Cost.Dominant(4), Cost: p.Cost}
}

func (r programReport) write(tw *tabwriter.Writer) {
	trunc := ""
	if r.Truncated {
		trunc = fmt.Sprintf(" (stopped at %d: the extremes are of those)", p4path.MaxPaths)
	}
	fmt.Fprintf(tw, "%s at %s: %d paths%s\n", r.File, r.Hook, r.Paths, trunc)
	fmt.Fprintf(tw, "%s\n", r.Profile)
	for _, n := range r.Notes {
		fmt.Fprintln(tw, n)
	}
	var assumed []string
	for _, t := range r.Tables {
		if t.Kind == "lpm" || t.Kind == "scan" {
			assumed = append(assumed, fmt.Sprintf("%s %d", shortName(t.Name), t.Entries))
		}
	}
	if len(assumed) > 0 {
		fmt.Fprintf(tw, "entries assumed (--entries): %s\n", strings.Join(assumed, ", "))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "\tns/packet\tper core\tpath")
	extremes := []struct {
		label string
		p     pathReport
	}{{"cheapest", r.Cheapest}, {"typical", r.Typical}, {"most expensive", r.Dearest}}
	for _, x := range extremes {
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t#%d %s\n", x.label, x.p.NS, estimate.FormatPPS(x.p.PPS), x.p.ID, x.p.Path)
	}
	fmt.Fprintln(tw)
	shown := map[int]string{} // a path that is two extremes is itemised once
	for _, x := range extremes {
		if first, ok := shown[x.p.ID]; ok {
			fmt.Fprintf(tw, "%s (#%d): the %s path\n", x.label, x.p.ID, first)
			continue
		}
		shown[x.p.ID] = x.label
		fmt.Fprintf(tw, "%s (#%d), dominated by:\n", x.label, x.p.ID)
		writeItems(tw, x.p.Dominant, x.p.NS)
	}
	for _, p := range r.Selected {
		fmt.Fprintf(tw, "\npath #%d: %s\n", p.ID, p.Path)
		fmt.Fprintf(tw, "  %.1f ns per packet, %s per core\n", p.NS, estimate.FormatPPS(p.PPS))
		writeItems(tw, p.Cost.Dominant(0), p.NS)
	}
	if len(r.All) > 0 {
		fmt.Fprintln(tw, "\nall paths:")
		fmt.Fprintln(tw, "#\tns/packet\tper core\tpath")
		for _, p := range r.All {
			fmt.Fprintf(tw, "%d\t%.1f\t%s\t%s\n", p.ID, p.NS, estimate.FormatPPS(p.PPS), p.Path)
		}
	}
}

func writeItems(tw *tabwriter.Writer, items []estimate.Item, total float64) {
	for _, it := range items {
		share := 0.0
		if total > 0 {
			share = 100 * it.NS / total
		}
		fmt.Fprintf(tw, "  %s\t%.1f ns\t%.0f%%\n", it.What, it.NS, share)
	}
}

func shortName(n string) string {
	if i := strings.LastIndex(n, "."); i >= 0 {
		return n[i+1:]
	}
	return n
}

// estimateTopology estimates every chain of a topology file.
func estimateTopology(w io.Writer, file string, profiles []string) error {
	t, err := readTopology(file)
	if err != nil {
		return err
	}
	hooks := map[datapath.Hook]bool{}
	for _, c := range t.Cubes() {
		hooks[c.Hook] = true
	}
	var hs []datapath.Hook
	for h := range hooks {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
	profs, notes, err := resolveProfiles(profiles, hs)
	if err != nil {
		return err
	}
	e := &estimate.Estimator{Profiles: profs}
	chains, err := e.Topology(t)
	if err != nil {
		return err
	}
	rep := topologyReport{File: file, Notes: notes, Chains: chains, Slices: estimate.Slices(chains)}
	for _, h := range hs {
		rep.Profiles = append(rep.Profiles, profs[h].Summary())
	}
	return show(w, rep, func(tw *tabwriter.Writer) { writeChains(tw, append(rep.Profiles, rep.Notes...), rep.Chains) })
}

type topologyReport struct {
	File     string               `json:"file"`
	Profiles []string             `json:"profiles"`
	Notes    []string             `json:"notes,omitempty"`
	Chains   []estimate.ChainCost `json:"chains"`
	Slices   []estimate.SliceCost `json:"slices,omitempty"`
}

// writeChains prints chains hop by hop with their totals.
func writeChains(tw *tabwriter.Writer, profiles []string, chains []estimate.ChainCost) {
	for _, p := range profiles {
		fmt.Fprintln(tw, p)
	}
	if len(chains) == 0 {
		fmt.Fprintln(tw, "no chain: no cube port is peered with an interface")
		return
	}
	for _, c := range chains {
		fmt.Fprintf(tw, "\nchain %s\n", c.ID)
		for _, h := range c.Hops {
			notes := h.Notes
			if h.Panel {
				notes = append(notes[:len(notes):len(notes)], "entered through the patch panel")
			}
			fmt.Fprintf(tw, "  %s\t%.1f ns\t%s\n", h.Hop.String(), h.NS, strings.Join(notes, "; "))
		}
		lb := ""
		if c.LowerBound {
			lb = " (at least: a hop has no cost model)"
		}
		fmt.Fprintf(tw, "  total\t%.1f ns\t%s per core%s\n", c.NS, estimate.FormatPPS(c.PPS), lb)
	}
	writeSlices(tw, estimate.Slices(chains))
}

// writeSlices prints each slice's estimate (its dearest chain's) against
// its own budget.
func writeSlices(tw *tabwriter.Writer, slices []estimate.SliceCost) {
	if len(slices) == 0 {
		return
	}
	fmt.Fprintln(tw, "\nslices (each costs its dearest chain):")
	for _, s := range slices {
		budget := ""
		if s.BudgetNS > 0 {
			verdict := "within"
			if s.NS > s.BudgetNS {
				verdict = "OVER"
			}
			budget = fmt.Sprintf("budget %.0f ns: %s", s.BudgetNS, verdict)
		}
		fmt.Fprintf(tw, "  slice %s\t%.1f ns\t%s per core\t%d chains, dearest %s\t%s\n", s.Slice, s.NS, estimate.FormatPPS(s.PPS), s.Chains, s.Chain, budget)
	}
}

// writeDryRunEstimate prints what the daemon estimates the chains of the
// topology applied would cost.
func writeDryRunEstimate(tw *tabwriter.Writer, chains []estimate.ChainCost, estErr string) {
	if estErr != "" {
		fmt.Fprintf(tw, "\nno cost estimate: %s\n", estErr)
		return
	}
	if chains == nil {
		return
	}
	fmt.Fprintln(tw, "\nestimated cost per packet, chain by chain (the daemon's profiles):")
	writeChains(tw, nil, chains)
}

// readTopology reads a topology file as `edgenf apply` does, decoded into
// the daemon's model (cube settings and entries included).
func readTopology(file string) (*cube.Topology, error) {
	js, err := topologyDocument(file)
	if err != nil {
		return nil, err
	}
	var doc cube.Document
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	t, err := doc.Topology()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	// Checked as the daemon checks it (hooks defaulted too), but for a
	// machine where its interfaces exist: a file is estimated before it is
	// deployed, often elsewhere.
	if err := t.Validate(everyInterface{}); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return t, nil
}

// everyInterface is a system on which every interface a topology names exists.
type everyInterface struct{}

func (everyInterface) IfaceExists(string) bool { return true }
