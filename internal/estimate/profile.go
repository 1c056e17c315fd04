package estimate

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/datapath"
)

// Format names the profile file format.
const Format = "edgenf-estimate-profile/1"

// DefaultDir is where `edgenf estimate calibrate` writes a machine's
// profiles (<hook>.json) and where the CLI and the daemon look for them.
const DefaultDir = "/var/lib/edgenf/estimate"

// Profile is a set of measured costs for one machine and hook.
type Profile struct {
	Format string        `json:"format"`
	Unit   string        `json:"unit"` // "ns"
	Hook   datapath.Hook `json:"hook"`
	Host
	// CPUMHz is the clock /proc/cpuinfo reported (cycles = ns × MHz / 1000).
	CPUMHz  float64   `json:"cpu_mhz,omitempty"`
	Created time.Time `json:"created"`
	// Method is "full" (every cost measured) or "short" (a few anchors
	// measured, the other costs scaled from the built-in profile).
	Method string `json:"method"`
	// Load is the load average at the start and the end of the
	// calibration: other work on the machine shows here.
	Load string `json:"load,omitempty"`
	// Took is how long the calibration took, loading included.
	Took   string `json:"took,omitempty"`
	Rounds int    `json:"rounds,omitempty"`
	Repeat int    `json:"repeat,omitempty"`
	// Costs maps each term to its cost per unit.
	Costs map[string]float64 `json:"costs"`
	// Measurements are what the calibration measured, and the model's fit
	// of each (for a reader checking the profile).
	Measurements []Measurement `json:"measurements,omitempty"`

	// Source says where the profile came from: a file, or "built-in".
	Source string `json:"-"`
}

// Host identifies the machine a profile was made on.
type Host struct {
	Kernel string `json:"kernel"`
	CPU    string `json:"cpu"`
}

func (h Host) String() string { return fmt.Sprintf("%s, kernel %s", h.CPU, h.Kernel) }

// Measurement is one calibration measurement: what it measured, the
// result, and what the fitted model gives for it.
type Measurement struct {
	Name  string  `json:"name"`
	Group string  `json:"group"`
	NS    float64 `json:"ns"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Model float64 `json:"model"`
}

// ThisHost is the machine this process runs on.
func ThisHost() Host {
	h := Host{Kernel: "unknown", CPU: "unknown CPU"}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return h
}

// CPUMHz is the clock of the first CPU in /proc/cpuinfo (0 if unknown).
func CPUMHz() float64 {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "cpu MHz" {
			var mhz float64
			fmt.Sscanf(strings.TrimSpace(v), "%g", &mhz)
			return mhz
		}
	}
	return 0
}

// LoadAverage is the 1, 5 and 15 minute load averages ("?" unknown):
// other work on the machine, which measurements record beside them.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Validate checks a profile's format and values.
func (p *Profile) Validate() error {
	if p.Format != Format {
		return fmt.Errorf("not an edgenf estimate profile (format %q, want %q)", p.Format, Format)
	}
	if p.Unit != "ns" {
		return fmt.Errorf("unit %q: only ns is supported", p.Unit)
	}
	if p.Hook != datapath.XDP && p.Hook != datapath.TC {
		return fmt.Errorf("hook %q: want xdp or tc", p.Hook)
	}
	if len(p.Costs) == 0 {
		return errors.New("no costs")
	}
	for t, c := range p.Costs {
		if math.IsNaN(c) || math.IsInf(c, 0) || math.Abs(c) > 1e7 {
			return fmt.Errorf("cost of %s: %v is not a plausible number of ns", t, c)
		}
	}
	for _, t := range RequiredTerms() {
		if _, ok := p.Costs[t]; !ok {
			return fmt.Errorf("no cost for %s", t)
		}
	}
	return nil
}

// Parse decodes and validates a profile.
func Parse(b []byte) (*Profile, error) {
	var p Profile
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Load reads a profile file.
func Load(path string) (*Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	p.Source = path
	return p, nil
}

// Save writes the profile atomically (temporary file, rename).
func (p *Profile) Save(path string) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

//go:embed profiles/*.json
var builtins embed.FS

// Builtin returns the profile shipped in the binary for hook, made on the
// reference machine.
func Builtin(hook datapath.Hook) (*Profile, error) {
	b, err := fs.ReadFile(builtins, "profiles/"+string(hook)+".json")
	if err != nil {
		return nil, fmt.Errorf("no built-in profile for hook %q", hook)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("built-in profile %s: %w", hook, err)
	}
	p.Source = "built-in"
	return p, nil
}

// DefaultPath is the calibrated profile's place for hook.
func DefaultPath(hook datapath.Hook) string { return filepath.Join(DefaultDir, string(hook)+".json") }

// Resolve finds the profile to use for hook: the file at path, or with
// path "" the machine's calibrated profile (DefaultPath). A missing file
// falls back to the built-in profile; notes say so, and say when the
// profile was made on another kernel or CPU than this one (naming both).
// A file that exists but is not a valid profile, or is for another hook,
// is an error.
func Resolve(path string, hook datapath.Hook) (*Profile, []string, error) {
	var notes []string
	explicit := path != ""
	if !explicit {
		path = DefaultPath(hook)
	}
	p, err := Load(path)
	switch {
	case err == nil:
		if p.Hook != hook {
			return nil, nil, fmt.Errorf("profile %s is for hook %s, not %s (calibrate with --hook %s)", path, p.Hook, hook, hook)
		}
	case errors.Is(err, fs.ErrNotExist):
		if p, err = Builtin(hook); err != nil {
			return nil, nil, err
		}
		if explicit {
			notes = append(notes, fmt.Sprintf("profile %s not found: using the built-in profile (made on %s)", path, p.Host))
		} else {
			notes = append(notes, fmt.Sprintf("no calibrated profile for this machine (%s): using the built-in profile (made on %s); `edgenf estimate calibrate` makes one", path, p.Host))
		}
	default:
		return nil, nil, err
	}
	if w := p.HostWarning(ThisHost()); w != "" {
		notes = append(notes, w)
	}
	return p, notes, nil
}

// HostWarning says, when the profile was made on another machine than h,
// which one and which this is; "" when they match.
func (p *Profile) HostWarning(h Host) string {
	var diff []string
	if p.Kernel != h.Kernel {
		diff = append(diff, fmt.Sprintf("kernel %s, this machine runs %s", p.Kernel, h.Kernel))
	}
	if p.CPU != h.CPU {
		diff = append(diff, fmt.Sprintf("CPU %s, this machine has %s", p.CPU, h.CPU))
	}
	if len(diff) == 0 {
		return ""
	}
	src := "profile " + p.Source
	if p.Source == "built-in" {
		src = "the built-in profile"
	}
	return fmt.Sprintf("warning: %s was made on another machine (%s): estimates may be off; `edgenf estimate calibrate` measures this one", src, strings.Join(diff, "; "))
}

// Summary is one line describing the profile.
func (p *Profile) Summary() string {
	src := p.Source
	if src == "" {
		src = "unsaved"
	}
	return fmt.Sprintf("profile %s: %s, %s, hook %s, %s calibration of %s", src, p.CPU, "kernel "+p.Kernel, p.Hook, p.Method, p.Created.UTC().Format("2006-01-02 15:04 UTC"))
}

// Terms lists the profile's terms in order.
func (p *Profile) Terms() []string {
	out := make([]string, 0, len(p.Costs))
	for t := range p.Costs {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
