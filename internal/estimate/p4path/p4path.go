// Package p4path enumerates the paths a packet can take through a P4
// program (v1model) and counts, for each, the constructs the cost model
// prices: headers parsed, tables looked up (hit with each action, or miss),
// actions and statements run, externs called, checksums, headers emitted,
// added or moved, and the verdict.
//
// A path is one choice at every branch: a parser select case, a table's
// outcome, an if or a switch whose condition is not known from what the
// path already decided (header validity is tracked, so isValid() tests are
// decided). Packets are assumed well formed: extracts do not run past the
// end of the packet and checksums verify (the error paths of a P4 program
// are its own branches, on parser_error for instance, and are followed).
//
// This package is the estimator's only dependence on the P4 compiler: it
// reads the checked program (sema: the typed syntax of control flow) and
// the lowered tables (ir: their kinds and key layouts). Nothing else of
// the estimator looks inside the compiler.
package p4path

import (
	"fmt"
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/ir"
)

// MaxPaths bounds the enumeration; a program with more paths gets the
// first MaxPaths (Truncated is set).
const MaxPaths = 20000

// Options of an enumeration.
type Options struct {
	// Entries is the number of entries of each table (by full or local
	// name) for tables whose lookup cost grows with it (LPM, ternary,
	// range). Tables not named hold DefaultEntries.
	Entries        map[string]int
	DefaultEntries int // 0 means 1
	// CPUPort is the egress_spec that punts besides 510 (0: 255).
	CPUPort int
	// FrameBytes is the size of the frame the paths are priced for
	// (0: DefaultFrameBytes). Only work over the payload depends on it:
	// a checksum *_with_payload sums the bytes after the parsed headers.
	FrameBytes int
}

// DefaultFrameBytes is the frame assumed without Options.FrameBytes: the
// smallest Ethernet frame (FCS excluded), as the hook sees it.
const DefaultFrameBytes = 60

// Program is a program's paths.
type Program struct {
	Paths     []*Path
	Truncated bool
	Tables    []Table
}

// Table describes one table as the model sees it.
type Table struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // hash, lpm, scan, const, keyless
	KeyBits int    `json:"key_bits"`
	Entries int    `json:"entries"` // assumed (lpm, scan) or const
}

// Path is one path through the program.
type Path struct {
	ID int `json:"id"` // 1-based, in enumeration order
	// Parser is the states visited, start first.
	Parser []string `json:"parser"`
	// Valid are the headers extracted by the parser, in order.
	Valid []string `json:"valid"`
	// Tables are the tables applied, in order, with their outcomes.
	Tables []Outcome `json:"tables,omitempty"`
	// Steps are the path's decisions in order: table outcomes, and the if
	// and switch conditions it could not decide from what it knew.
	Steps   []string       `json:"steps,omitempty"`
	Verdict string         `json:"verdict"` // send, drop, punt
	Uses    []estimate.Use `json:"uses"`

	statesSeen int // distinct parser states
}

// Outcome is what one table did on a path.
type Outcome struct {
	Table  string `json:"table"`
	Hit    bool   `json:"hit"`
	Action string `json:"action"`
}

func (o Outcome) String() string {
	h := "miss"
	if o.Hit {
		h = "hit"
	}
	return fmt.Sprintf("%s %s → %s", short(o.Table), h, short(o.Action))
}

// Describe is the path in one line: headers, decisions, verdict.
func (p *Path) Describe() string {
	var parts []string
	if len(p.Valid) > 0 {
		parts = append(parts, strings.Join(shortAll(p.Valid), " "))
	} else {
		parts = append(parts, "no header")
	}
	parts = append(parts, p.Steps...)
	return strings.Join(parts, "; ") + "; " + p.Verdict
}

func short(name string) string {
	if i := strings.LastIndex(name, "."); i >= 0 && !strings.Contains(name, "[") {
		return name[i+1:]
	}
	return strings.TrimPrefix(name, "hdr.")
}

func shortAll(v []string) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = strings.TrimPrefix(s, "hdr.")
	}
	return out
}

// Check runs the compiler's front end on a program (no C, no clang):
// errors are the compiler's, file:line:col.
func Check(opt p4.Options) (*ir.Program, error) {
	prog, _, err := p4.Check(opt)
	return prog, err
}

// Enumerate lists the paths of a checked program.
func Enumerate(prog *ir.Program, opt Options) (*Program, error) {
	w, err := newWalker(prog, opt)
	if err != nil {
		return nil, err
	}
	w.run()
	out := &Program{Paths: w.paths, Truncated: w.truncated}
	for _, t := range prog.Tables {
		out.Tables = append(out.Tables, Table{Name: t.Name, Kind: t.Kind, KeyBits: keyBits(t), Entries: w.entries(t)})
	}
	return out, nil
}

func keyBits(t *ir.Table) int {
	n := 0
	for _, k := range t.KeysDecl {
		n += k.Width
	}
	return n
}

// Priced is a path with its cost.
type Priced struct {
	*Path
	Cost estimate.Breakdown
}

// Price prices every path with p.
func (pr *Program) Price(p *estimate.Profile) []Priced {
	out := make([]Priced, len(pr.Paths))
	for i, path := range pr.Paths {
		out[i] = Priced{Path: path, Cost: p.Price(path.Uses)}
	}
	return out
}

// Summary is the three paths a reader wants first.
type Summary struct {
	Cheapest, Typical, Dearest Priced
}

// Summarise picks the cheapest, the typical and the most expensive path.
//
// The typical path is the one a packet of the traffic the program is
// written for takes: forwarded rather than punted or dropped; through
// the most distinct parser states (its protocols), looping least; meeting
// tables that hit and run an action (an entry that does nothing is not
// what a table is there for). Among the paths left (they differ in action
// choice or undecided branches), the one of median cost.
func Summarise(paths []Priced) Summary {
	if len(paths) == 0 {
		return Summary{}
	}
	var s Summary
	s.Cheapest, s.Dearest = paths[0], paths[0]
	for _, p := range paths[1:] {
		if p.Cost.Total < s.Cheapest.Cost.Total {
			s.Cheapest = p
		}
		if p.Cost.Total > s.Dearest.Cost.Total {
			s.Dearest = p
		}
	}
	best := []Priced{}
	var bestKey [4]int
	for _, p := range paths {
		k := typicalKey(p.Path)
		switch c := compareKey(k, bestKey); {
		case len(best) == 0 || c > 0:
			best, bestKey = []Priced{p}, k
		case c == 0:
			best = append(best, p)
		}
	}
	sort.SliceStable(best, func(i, j int) bool { return best[i].Cost.Total < best[j].Cost.Total })
	s.Typical = best[(len(best)-1)/2]
	return s
}

// typicalKey ranks a path for Summarise: larger is more typical.
func typicalKey(p *Path) [4]int {
	v := map[string]int{"send": 2, "punt": 1, "drop": 0}[p.Verdict]
	hits := 0
	for _, o := range p.Tables {
		switch {
		case !o.Hit:
			hits--
		case short(o.Action) != "NoAction":
			hits++
		}
	}
	return [4]int{v, p.statesSeen, -len(p.Parser), hits}
}

func compareKey(a, b [4]int) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] > b[i] {
				return 1
			}
			return -1
		}
	}
	return 0
}

// Select returns the paths matching spec: a path id ("7" or "#7"), or
// comma- or space-separated conditions: a header name ("ipv4") for each
// header the parser extracted (all of them: the set must be exact),
// TABLE=hit, TABLE=miss or TABLE=ACTION for table outcomes (tables by
// local or full name), @LINE=true|false for a condition the path could not
// decide (the if at that line of the program), and verdict=send|drop|punt.
func (pr *Program) Select(spec string) ([]*Path, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("empty --path")
	}
	var id int
	if _, err := fmt.Sscanf(strings.TrimPrefix(spec, "#"), "%d", &id); err == nil && fmt.Sprint(id) == strings.TrimPrefix(spec, "#") {
		if id < 1 || id > len(pr.Paths) {
			return nil, fmt.Errorf("--path %s: the program has paths 1 to %d", spec, len(pr.Paths))
		}
		return []*Path{pr.Paths[id-1]}, nil
	}
	var headers []string
	tables := map[string]string{}
	branches := map[string]string{}
	verdict := ""
	for _, tok := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		k, v, ok := strings.Cut(tok, "=")
		switch {
		case !ok:
			headers = append(headers, strings.TrimPrefix(tok, "hdr."))
		case k == "verdict":
			if v != "send" && v != "drop" && v != "punt" {
				return nil, fmt.Errorf("--path: verdict=%s: want send, drop or punt", v)
			}
			verdict = v
		case strings.HasPrefix(k, "@"):
			if v != "true" && v != "false" {
				return nil, fmt.Errorf("--path: %s=%s: want true or false", k, v)
			}
			branches[k] = v
		default:
			tables[k] = v
		}
	}
	known := map[string]bool{}
	for _, t := range pr.Tables {
		known[t.Name], known[short(t.Name)] = true, true
	}
	for t := range tables {
		if !known[t] {
			var names []string
			for _, x := range pr.Tables {
				names = append(names, short(x.Name))
			}
			return nil, fmt.Errorf("--path: no table %q (tables: %s)", t, strings.Join(names, ", "))
		}
	}
	var out []*Path
	for _, p := range pr.Paths {
		if matches(p, headers, tables, verdict) && takes(p, branches) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--path %q: no path of the program matches (`--all` lists them)", spec)
	}
	return out, nil
}

// takes reports whether p decided the conditions at the given lines so.
func takes(p *Path, branches map[string]string) bool {
	for line, v := range branches {
		found := false
		for _, s := range p.Steps {
			if strings.Contains(s, " "+line+") "+v) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func matches(p *Path, headers []string, tables map[string]string, verdict string) bool {
	if verdict != "" && p.Verdict != verdict {
		return false
	}
	if len(headers) > 0 {
		have := shortAll(p.Valid)
		if len(have) != len(headers) {
			return false
		}
		set := map[string]bool{}
		for _, h := range have {
			set[h] = true
		}
		for _, h := range headers {
			if !set[h] {
				return false
			}
		}
	}
	for t, want := range tables {
		found := false
		for _, o := range p.Tables {
			if o.Table != t && short(o.Table) != t {
				continue
			}
			found = true
			switch want {
			case "hit":
				if !o.Hit {
					return false
				}
			case "miss":
				if o.Hit {
					return false
				}
			default:
				if o.Action != want && short(o.Action) != want {
					return false
				}
			}
		}
		if !found {
			return false
		}
	}
	return true
}
