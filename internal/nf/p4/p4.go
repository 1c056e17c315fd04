// Package p4 is the NF type of cubes running a compiled P4-16 program. The
// program is part of the cube's settings; its tables, actions and counters
// (from the compiled P4Info) shape the entries the cube accepts. Giving the
// cube another program swaps it in place (one patch-panel update).
package p4

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	p4c "github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// Settings select the program.
type Settings struct {
	// Program names the program in messages (file:line:col), e.g.
	// "l2switch.p4"; the daemon never reads it.
	Program string `json:"program,omitempty" pattern:"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}$" doc:"the program's name in messages, e.g. l2switch.p4 (a name, never read: the source is inline)"`
	// Source is the program text: the CLI reads the file and sends it, so
	// the daemon reads no file on a client's behalf and the state holds
	// exactly what was compiled. #include resolves against the built-in
	// files and the administrator's -p4-include-dir only.
	Source  string            `json:"source" pattern:"^[^\\x00]+$" doc:"the P4-16 source text, at most 2 MiB; a program that does not compile is 422"`
	Defines map[string]string `json:"defines,omitempty" pattern:"^[^\\n\\r\\x00]*$" doc:"macros: NAME (a C identifier, 422 otherwise) = a value of one line"`
	// CPUPort is the egress_spec of the CPU port (packet-in) and the
	// ingress_port of packet-outs; 0 means 255. 510 punts too.
	CPUPort int `json:"cpu_port,omitempty"`
	// Learn turns digests into table entries (slowpath.go).
	Learn []LearnRule `json:"learn,omitempty"`
	// LearnMax bounds the entries learned (0: 4096).
	LearnMax int `json:"learn_max,omitempty" minimum:"0"`
}

// Validate compiles the program (cached): a program that does not compile
// is refused with the compiler's file:line:col message.
func (s *Settings) Validate(c *cube.Cube) error {
	if err := s.normalize(); err != nil {
		return err
	}
	r, err := compiled(s)
	if err != nil {
		return cube.Unprocessable("program", "%v", err)
	}
	return s.validateSlowPath(r.Info)
}

// MaxSource bounds a program's source text.
const MaxSource = 2 << 20

var (
	programNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}$`)
	defineRE      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
)

// normalize checks what goes to the compiler and gives the program its
// display name: a file name without directories (states of older daemons
// hold the path the CLI read), "program.p4" when none is given.
func (s *Settings) normalize() error {
	if s.Source == "" {
		return cube.Errorf("source", "required: the program's P4-16 text (the daemon reads no file; `edgenf cube add NAME p4 --program FILE` sends the file's text)")
	}
	if len(s.Source) > MaxSource {
		return cube.Errorf("source", "%d bytes, at most %d", len(s.Source), MaxSource)
	}
	if !utf8.ValidString(s.Source) || strings.ContainsRune(s.Source, 0) {
		return cube.Errorf("source", "not text: P4-16 source is UTF-8 without NUL bytes")
	}
	switch {
	case s.Program == "":
		s.Program = "program.p4"
	case strings.Contains(s.Program, "/"):
		s.Program = path.Base(s.Program)
	}
	if !programNameRE.MatchString(s.Program) {
		return cube.Errorf("program", "invalid name %q: a file name of letters, digits, '.', '_', '+' or '-' (the source is inline; this only names it in messages)", s.Program)
	}
	for k, v := range s.Defines {
		if !defineRE.MatchString(k) {
			return cube.Unprocessable("defines", "invalid macro name %q", k)
		}
		if strings.ContainsAny(v, "\n\r\x00") {
			return cube.Errorf("defines."+k, "a macro's value is one line")
		}
	}
	return nil
}

// Entry is a table entry, written as P4 users write them: match values like
// 198.18.0.0/24 (lpm), 0x0a00&&&0xff00 (ternary), 1024->2048 (range), MACs,
// IPv4/IPv6 addresses, decimal or hex.
type Entry struct {
	Table  string            `json:"table" doc:"a table of the program (404 otherwise)"`
	Match  map[string]string `json:"match,omitempty" format:"p4-match" doc:"key field (of the table, 404 otherwise) = match"`
	Action string            `json:"action,omitempty" doc:"an action of the table (404 otherwise); none in tables implemented by an action profile"`
	Params map[string]string `json:"params,omitempty" format:"p4-value" doc:"parameter (of the action, 404 otherwise) = value"`
	// Member or Group: what an entry of a table implemented by an action
	// profile or selector points to (actprof.go).
	Member   *uint32 `json:"member,omitempty" doc:"tables implemented by an action profile: a member of it (404 otherwise)"`
	Group    *uint32 `json:"group,omitempty" doc:"tables implemented by an action selector: a group of it (404 otherwise)"`
	Priority uint32  `json:"priority,omitempty"` // ternary, range, optional: higher wins
	// IdleTimeout ("30s", "5m") reports the entry when no packet has hit
	// it for that long (tables with support_timeout = true; idle.go).
	IdleTimeout string `json:"idle_timeout,omitempty" format:"p4-duration"`
	// Metadata is opaque to edgenf, kept with the entry for its controller
	// (P4Runtime's TableEntry.metadata).
	Metadata []byte `json:"metadata,omitempty"`
}

// Validate encodes the entry against the cube's compiled program.
func (e *Entry) Validate(c *cube.Cube) error {
	if err := checkForms("match", e.Match, p4info.MatchSyntax); err != nil {
		return err
	}
	if err := checkForms("params", e.Params, p4info.ValueSyntax); err != nil {
		return err
	}
	if _, err := parseIdleTimeout("idle_timeout", e.IdleTimeout, nil); err != nil {
		return err
	}
	prog, err := programOf(c)
	if err != nil {
		return err
	}
	t := prog.Info.Edgenf.Table(e.Table)
	if t == nil {
		return cube.NotFound("table", "the program has no table %q (tables: %s)", e.Table, tableNames(prog.Info.Edgenf))
	}
	if r, ok := ref(e.Member, e.Group); ok || t.Profile != "" { // actprof.go
		if err := validateRef(c, t, e.Member, e.Group, e.Action, e.Params); err != nil {
			return err
		}
		for _, k := range sortedKeys(e.Match) {
			if t.Key(k) == nil {
				return cube.NotFound("match."+k, "table %s has no key field %q", t.Name, k)
			}
		}
		if _, err := t.EncodeRefEntry(e.Matches(), r, 0, e.Priority); err != nil {
			return cube.Conflict("match", "%v", err)
		}
	} else if err := namesIn(t, e.Action, e.Match, e.Params); err != nil {
		return err
	} else if _, err := t.EncodeEntry(e.Matches(), e.Action, e.Args(), e.Priority); err != nil {
		return cube.Conflict("match", "%v", err)
	}
	if _, err := parseIdleTimeout("idle_timeout", e.IdleTimeout, t); err != nil {
		return err
	}
	// Full names, so that an entry written with aliases has one key.
	e.Table = t.Name
	if a := t.Action(e.Action); a != nil {
		e.Action = a.Name
	}
	return nil
}

func (e *Entry) Matches() []p4info.Match {
	keys := sortedKeys(e.Match)
	out := make([]p4info.Match, 0, len(keys))
	for _, k := range keys {
		out = append(out, p4info.Match{Field: k, Value: e.Match[k]})
	}
	return out
}

func (e *Entry) Args() []p4info.Arg {
	keys := sortedKeys(e.Params)
	out := make([]p4info.Arg, 0, len(keys))
	for _, k := range keys {
		out = append(out, p4info.Arg{Name: k, Value: e.Params[k]})
	}
	return out
}

// Key identifies an entry: its table, match and priority (the key of the
// entries table).
func (e *Entry) Key() string {
	var b strings.Builder
	b.WriteString(e.Table)
	for _, k := range sortedKeys(e.Match) {
		fmt.Fprintf(&b, " %s=%s", k, e.Match[k])
	}
	if e.Priority > 0 {
		fmt.Fprintf(&b, " @%d", e.Priority)
	}
	return b.String()
}

// Default is a table's default action.
type Default struct {
	Table  string            `json:"table" doc:"a table of the program (404 otherwise)"`
	Action string            `json:"action,omitempty" doc:"an action of the table (404 otherwise); none in tables implemented by an action profile"`
	Params map[string]string `json:"params,omitempty" format:"p4-value" doc:"parameter (of the action, 404 otherwise) = value"`
	Member *uint32           `json:"member,omitempty" doc:"tables implemented by an action profile: a member of it (404 otherwise)"`
	Group  *uint32           `json:"group,omitempty" doc:"tables implemented by an action selector: a group of it (404 otherwise)"`
}

// Validate checks the action against the table.
func (d *Default) Validate(c *cube.Cube) error {
	if err := checkForms("params", d.Params, p4info.ValueSyntax); err != nil {
		return err
	}
	prog, err := programOf(c)
	if err != nil {
		return err
	}
	t := prog.Info.Edgenf.Table(d.Table)
	if t == nil {
		return cube.NotFound("table", "the program has no table %q", d.Table)
	}
	if t.ConstDefault {
		return cube.Conflict("table", "table %s has a const default_action", d.Table)
	}
	if _, ok := ref(d.Member, d.Group); ok || t.Profile != "" { // actprof.go
		if err := validateRef(c, t, d.Member, d.Group, d.Action, d.Params); err != nil {
			return err
		}
		d.Table = t.Name
		return nil
	}
	if err := namesIn(t, d.Action, nil, d.Params); err != nil {
		return err
	}
	if _, err := t.EncodeValue(d.Action, (&Entry{Params: d.Params}).Args()); err != nil {
		return cube.Conflict("action", "%v", err)
	}
	d.Table = t.Name
	if a := t.Action(d.Action); a != nil {
		d.Action = a.Name
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func tableNames(r *p4info.Runtime) string {
	var n []string
	for _, t := range r.Tables {
		n = append(n, t.Name)
	}
	return strings.Join(n, ", ")
}

// programOf compiles the cube's program (from the cache).
func programOf(c *cube.Cube) (*p4c.Result, error) {
	v, err := cube.Decode("config", c.Config, &Settings{})
	if err != nil {
		return nil, err
	}
	s := v.(*Settings)
	if err := s.normalize(); err != nil {
		return nil, cube.Within("config", err)
	}
	r, err := compiled(s)
	if err != nil {
		return nil, cube.Unprocessable("config.program", "%v", err)
	}
	return r, nil
}

func objectFor(c *cube.Cube) ([]byte, error) {
	r, err := programOf(c)
	if err != nil {
		return nil, err
	}
	if c.Hook == datapath.TC {
		return r.ObjectTC, nil
	}
	return r.Object, nil
}

// --- control plane ---

type controller struct {
	sp   *slowState // digests, packet-ins, learned entries (slowpath.go)
	run  *running   // pins the program the cube runs (compile.go)
	ints *intStats  // INT hop reports (int.go)
}

// Close lets the cache evict the cube's program.
func (ctl controller) Close() { ctl.run.release() }

// runtimeOf binds the compiled model to the cube's loaded maps.
func runtimeOf(h cube.Handle, c *cube.Cube) (*tableruntime.Program, error) {
	r, err := programOf(c)
	if err != nil {
		return nil, err
	}
	maps := map[string]*ebpf.Map{}
	for _, name := range mapNames(r.Info.Edgenf) {
		m, err := h.Map(name)
		if err != nil {
			return nil, err
		}
		maps[name] = m
	}
	if err := replMaps(h, r, maps); err != nil { // sessions.go
		return nil, err
	}
	return tableruntime.New(r.Info, maps)
}

func mapNames(r *p4info.Runtime) []string {
	var out []string
	for _, t := range r.Tables {
		for _, n := range []string{t.Map, t.CountMap, t.DefaultMap} {
			if n != "" {
				out = append(out, n)
			}
		}
	}
	for _, c := range r.Counters {
		if c.Map != "" {
			out = append(out, c.Map)
		}
	}
	for _, v := range r.ValueSets {
		out = append(out, v.Map)
	}
	for _, g := range r.Registers {
		out = append(out, g.Map)
	}
	for _, m := range r.Meters {
		out = append(out, m.Map)
	}
	for _, p := range r.Profiles {
		out = append(out, p.MemberMap, p.GroupMap, p.IndexMap)
	}
	return out
}

// Sync writes every entry and default action. Entries the kernel already has
// are rewritten in place (a restart or a new program); entries removed
// through the API were removed one by one (DeleteEntry).
func (ctl controller) Sync(h cube.Handle, c *cube.Cube) error {
	prog, err := runtimeOf(h, c)
	if err != nil {
		return err
	}
	if s, err := settingsOf(c); err == nil && s.normalize() == nil {
		ctl.run.hold(s)
	}
	if err := syncProfiles(prog, c); err != nil { // actprof.go: members and groups before the entries naming them
		return err
	}
	entries, err := entriesTable.Entries(c)
	if err != nil {
		return err
	}
	for _, v := range entries {
		if err := put(prog, v.(*Entry)); err != nil {
			return err
		}
	}
	defaults, err := defaultsTable.Entries(c)
	if err != nil {
		return err
	}
	for _, v := range defaults {
		d := v.(*Default)
		if err := setDefault(prog, d); err != nil {
			return fmt.Errorf("default of %s: %w", d.Table, err)
		}
	}
	if err := pruneProfiles(prog, c); err != nil {
		return err
	}
	if err := syncReplication(prog, c); err != nil { // sessions.go
		return err
	}
	if ctl.sp != nil {
		ctl.sp.resetIdle(c) // idle.go
	}
	ctl.syncLearned(h, c)
	return nil
}

func put(prog *tableruntime.Program, e *Entry) error {
	if ok, err := putRef(prog, e); ok { // actprof.go
		return err
	}
	if err := prog.AddEntry(e.Table, e.Matches(), e.Action, e.Args(), e.Priority); err != nil {
		return fmt.Errorf("entry %s: %w", e.Key(), err)
	}
	return nil
}

// PutEntry writes one entry (or default action).
func (ctl controller) PutEntry(h cube.Handle, c *cube.Cube, table string, item any) error {
	prog, err := runtimeOf(h, c)
	if err != nil {
		return err
	}
	if ok, err := putRepl(prog, item); ok { // sessions.go
		return err
	}
	if ok, err := putProfile(prog, item); ok { // actprof.go
		return err
	}
	switch v := item.(type) {
	case *Entry:
		if err := put(prog, v); err != nil {
			return err
		}
		if ctl.sp != nil {
			ctl.sp.watchIdle(v.Key(), v)
		}
		return nil
	case *Default:
		return setDefault(prog, v)
	}
	return fmt.Errorf("unknown table %s", table)
}

// DeleteEntry removes one entry, or restores the compiled default action.
func (ctl controller) DeleteEntry(h cube.Handle, c *cube.Cube, table string, item any) error {
	prog, err := runtimeOf(h, c)
	if err != nil {
		return err
	}
	if ok, err := deleteRepl(prog, item); ok { // sessions.go
		return err
	}
	if ok, err := deleteProfile(prog, c, item); ok { // actprof.go
		return err
	}
	switch v := item.(type) {
	case *Entry:
		if err := prog.DeleteEntry(v.Table, v.Matches(), v.Priority); err != nil {
			return err
		}
		if ctl.sp != nil {
			ctl.sp.watchIdle(v.Key(), nil)
		}
		return nil
	case *Default:
		return prog.ResetDefault(v.Table)
	}
	return fmt.Errorf("unknown table %s", table)
}

func model(h cube.Handle, c *cube.Cube) (any, error) {
	r, err := programOf(c)
	if err != nil {
		return nil, err
	}
	return r.Info, nil
}

var entriesTable = cube.Table{
	Name: "entries",
	Doc:  "Table entries of the P4 program (key: table, match and priority).",
	Item: &Entry{},
	Key:  func(v any) string { return v.(*Entry).Key() },
}

var defaultsTable = cube.Table{
	Name: "defaults",
	Doc:  "Default actions set by the control plane (key: table).",
	Item: &Default{},
	Key:  func(v any) string { return v.(*Default).Table },
}

// Type is the p4 NF type.
var Type = &cube.Type{
	Name:        "p4",
	Description: "Runs a P4-16 program (v1model) compiled to eBPF; its P4 port numbers are the cube's ports.",
	Hooks:       []datapath.Hook{datapath.XDP, datapath.TC},
	ObjectFor:   objectFor,
	ExplainLoadError: func(c *cube.Cube, err error) error {
		if r, perr := programOf(c); perr == nil {
			return r.ExplainLoadError(err)
		}
		return err
	},
	Config: &Settings{},
	Tables: []cube.Table{entriesTable, defaultsTable, cloneSessionsTable, mcGroupsTable, membersTable, groupsTable},
	Views: []cube.View{
		{Name: "counters", Doc: "Non-zero indexes of the program's counters.", Item: &CounterValue{}, List: listCounters},
		{Name: "p4info", Doc: "The program's model (P4Info-compatible: tables, match fields, actions, counters, ids).", List: model},
		{Name: "registers", Doc: "Non-zero cells of the program's registers.", Item: &RegisterValue{}, List: listRegisters},
		{Name: "meters", Doc: "Configured cells of the program's meters (RFC 2698 rates per second and bursts).", Item: &MeterValue{}, List: listMeters},
		{Name: "digests", Doc: "Recent digests (decoded by the P4Info digest type), oldest first; at most 1024 digests and packet-ins are kept.", Item: &Event{}, List: listDigests},
		{Name: "packet_ins", Doc: "Recent packets sent to the CPU port, with their packet_in header decoded.", Item: &Event{}, List: listPacketIns},
		{Name: "idle", Doc: "Entries with an idle timeout (configured and learned): how long since a packet hit each, and whether that is past the timeout.", Item: &IdleEntry{}, List: listIdle},
		{Name: "learned", Doc: "Table entries installed by the learning rules (settings.learn) from digests.", Item: &LearnedEntry{}, List: listLearned},
		{Name: "slowpath", Doc: "Slow-path counters: digests and logs sent and lost in the kernel, received, malformed, learned, suppressed.", Item: &SlowPathStats{}, Object: true, List: slowPathStats},
	},
	Actions: []cube.Action{
		{Name: "register_read", Doc: "Read register cells, zeros included: index alone one cell, index..last a range, neither every cell.", Args: &RegisterCells{}, Do: registerRead},
		{Name: "register_write", Doc: "Write register cells: index alone one cell, index..last a range, neither every cell.", Args: &RegisterWriteArgs{}, Do: registerWrite},
		{Name: "register_reset", Doc: "Set register cells back to the register's initial value (PSA's initial_value, else 0): index alone one cell, index..last a range, neither every cell.", Args: &RegisterCells{}, Do: registerReset},
		{Name: "meter_set", Doc: "Configure a meter cell (or every cell when index is omitted): cir/pir per second, cburst/pburst; reset: unconfigured.", Args: &MeterSetArgs{}, Do: meterSet},
		{Name: "direct_meter_set", Doc: "Configure the direct meter of a table entry (table, match, priority as in entries): cir/pir per second, cburst/pburst; reset: unconfigured.", Args: &DirectMeterSetArgs{}, Do: directMeterSet},
		{Name: "poll", Doc: "Long poll: digests, packet-ins and idle timeouts after seq 'after' (kind: digest, packet_in, idle_timeout or all), waiting up to timeout_ms for the first.", Args: &PollArgs{}, Do: pollAction},
		{Name: "time_since_hit", Doc: "How long ago a packet last hit each of the entries named (table, match, priority; tables with support_timeout).", Args: &SinceHitArgs{}, Do: sinceHit},
		{Name: "packet_out", Doc: "Inject a frame (hex) at the CPU port with the program's packet_out header (metadata) in front, as a P4Runtime packet-out.", Args: &PacketOutArgs{}, Do: packetOut, Injects: true},
	},
	Prepare: prepare,
	Upgrade: upgrade,
	New:     func() cube.Controller { return controller{sp: newSlowState(), run: &running{}, ints: &intStats{}} },
}

func init() { cube.Register(Type) }
