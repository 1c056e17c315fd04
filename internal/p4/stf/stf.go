// Package stf reads p4c's STF test format and runs it against a compiled
// program with BPF_PROG_TEST_RUN (the XDP object).
//
// Supported commands:
//
//	packet <port> <hex bytes ...>
//	expect <port> <hex bytes with * nibble wildcards ...> [$]
//	no_packet                      (edgenf: the previous packet produced no output)
//	add <table> [<priority>] <field>:<value> ... <action>(<param>:<value>, ...)
//	setdefault <table> <action>(<param>:<value>, ...)
//	check_counter <counter>(<index>) [packets|bytes] [== != < > <= >=] <value>
//	register_write <register> <index> <value>
//	register_read <register> <index> <value>   (the cell must equal value)
//	register_read <register> <index>           (read only: p4c's PSA samples)
//	register_reset <register>                  (every cell its initial value)
//	meter_set <meter> <index> <cir> <cburst> <pir> <pburst>   (edgenf; units/s, units)
//	direct_meter_set <table> [<priority>] <field>:<value> ... <cir> <cburst> <pir> <pburst>   (edgenf)
//	meter_set_rates <meter> <index> <cir>:<cburst> <pir>:<pburst>, meter_array_set_rates, meter_get_rates   (BMv2's; meterrates.go)
//	mc_mgrp_create <group>, mc_node_create <rid> <port>..., mc_node_associate <group> <node>
//	mirroring_add <session> <port>, mirroring_add_mc <session> <group>,
//	mirroring_get <session> (fails if the session does not exist)   (replicate.go)
//	wait
//
// Priorities mean what they mean in p4c's STF files: the higher number wins
// (p4c's bmv2stf.py hands BMv2, where the lower number wins, 10000 minus
// it); entries of ternary tables without a priority rank in the order they
// were added. Outputs are compared
// with the expects per port, in order, when the test ends; port 510 is the
// CPU port (packets punted to the slow path).
package stf

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// Cmd is one STF command.
type Cmd struct {
	Line     int
	Kind     string // packet, expect, no_packet, add, setdefault, check_counter, wait
	Port     int
	Data     []byte // packet / expect bytes
	Mask     []byte // expect: 0xf nibble masks per byte (0xff = compare whole byte)
	Exact    bool   // expect ... $
	Table    string
	Priority int // -1 if absent
	Matches  []p4info.Match
	Action   string
	Args     []p4info.Arg
	Counter  string
	Index    uint32
	Field    string // packets / bytes
	Op       string
	Value    uint64
	Register string // register_read / register_write
	NoCheck  bool   // register_read without a value: the cell is read, not checked
	Meter    string // meter_set, meter_get
	Rates    [4]uint64
	AllCells bool     // meter_set from meter_array_set_rates: every cell
	Nums     []uint64 // mc_* and mirroring_* arguments (replicate.go), act_prof_* ids (actprof.go)
	Profile  string   // act_prof_*
}

// Parse reads an STF file.
func Parse(name, text string) ([]*Cmd, error) {
	var cmds []*Cmd
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	ln := 0
	for sc.Scan() {
		ln++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		c, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, ln, err)
		}
		c.Line = ln
		cmds = append(cmds, c)
	}
	return cmds, nil
}

func parseLine(line string) (*Cmd, error) {
	f := strings.Fields(line)
	c := &Cmd{Kind: strings.ToLower(f[0]), Priority: -1}
	switch c.Kind {
	case "packet", "expect":
		if len(f) < 2 {
			return nil, fmt.Errorf("%s needs a port", c.Kind)
		}
		p, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("bad port %q", f[1])
		}
		c.Port = p
		hexs := strings.Join(f[2:], "")
		if strings.HasSuffix(hexs, "$") {
			c.Exact = true
			hexs = strings.TrimSuffix(hexs, "$")
		}
		if c.Kind == "packet" && strings.Contains(hexs, "*") {
			return nil, fmt.Errorf("wildcards are only allowed in expect")
		}
		if len(hexs)%2 != 0 {
			return nil, fmt.Errorf("odd number of hex digits")
		}
		data := make([]byte, len(hexs)/2)
		mask := make([]byte, len(hexs)/2)
		for i := 0; i < len(hexs); i += 2 {
			var b, m byte
			for k := 0; k < 2; k++ {
				ch := hexs[i+k]
				b <<= 4
				m <<= 4
				if ch == '*' {
					continue
				}
				v, err := hex.DecodeString("0" + string(ch))
				if err != nil {
					return nil, fmt.Errorf("bad hex digit %q", ch)
				}
				b |= v[0]
				m |= 0xf
			}
			data[i/2], mask[i/2] = b, m
		}
		c.Data, c.Mask = data, mask
	case "no_packet", "wait":
	case "add", "setdefault":
		toks := splitTop(strings.TrimSpace(line[len(f[0]):]))
		if len(toks) < 2 {
			return nil, fmt.Errorf("%s needs a table and an action", c.Kind)
		}
		c.Table = toks[0]
		rest := toks[1:]
		if c.Kind == "add" && len(rest) > 0 {
			if n, err := strconv.Atoi(rest[0]); err == nil {
				if n < 0 || n >= maxPriority {
					return nil, fmt.Errorf("priority %d out of range (0..%d)", n, maxPriority-1)
				}
				c.Priority = n
				rest = rest[1:]
			}
		}
		if len(rest) == 0 {
			return nil, fmt.Errorf("missing action")
		}
		act := rest[len(rest)-1]
		for _, m := range rest[:len(rest)-1] {
			mt, err := parseMatch(m)
			if err != nil {
				return nil, err
			}
			c.Matches = append(c.Matches, mt)
		}
		open := strings.IndexByte(act, '(')
		if open < 0 || !strings.HasSuffix(act, ")") {
			return nil, fmt.Errorf("bad action %q (want name(param:value, ...))", act)
		}
		c.Action = act[:open]
		for _, a := range strings.Split(act[open+1:len(act)-1], ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			i := strings.IndexByte(a, ':')
			if i <= 0 && (c.Action == "member" || c.Action == "group") { // member(id), group(id): actprof.go
				c.Args = append(c.Args, p4info.Arg{Value: a})
				continue
			}
			if i <= 0 {
				return nil, fmt.Errorf("bad action parameter %q (want name:value)", a)
			}
			c.Args = append(c.Args, p4info.Arg{Name: strings.TrimSpace(a[:i]), Value: strings.TrimSpace(a[i+1:])})
		}
	case "check_counter":
		if len(f) < 3 {
			return nil, fmt.Errorf("check_counter name(index) [packets|bytes] [op] value")
		}
		ref := f[1]
		open := strings.IndexByte(ref, '(')
		if open < 0 || !strings.HasSuffix(ref, ")") {
			return nil, fmt.Errorf("bad counter reference %q", ref)
		}
		c.Counter = ref[:open]
		idx, err := strconv.ParseUint(ref[open+1:len(ref)-1], 0, 32)
		if err != nil {
			return nil, fmt.Errorf("bad counter index in %q", ref)
		}
		c.Index = uint32(idx)
		rest := f[2:]
		c.Field, c.Op = "packets", "=="
		if len(rest) > 0 && (rest[0] == "packets" || rest[0] == "bytes") {
			c.Field = rest[0]
			rest = rest[1:]
		}
		if len(rest) > 0 {
			switch rest[0] {
			case "==", "!=", "<", ">", "<=", ">=":
				c.Op = rest[0]
				rest = rest[1:]
			}
		}
		if len(rest) != 1 {
			return nil, fmt.Errorf("check_counter needs a value")
		}
		v, err := strconv.ParseUint(rest[0], 0, 64)
		if err != nil {
			return nil, fmt.Errorf("bad counter value %q", rest[0])
		}
		c.Value = v
	case "direct_meter_set":
		if err := parseDirectMeterSet(c, f); err != nil {
			return nil, err
		}
	case "meter_set":
		if len(f) != 7 {
			return nil, fmt.Errorf("meter_set <meter> <index> <cir> <cburst> <pir> <pburst>")
		}
		c.Meter = f[1]
		idx, err := strconv.ParseUint(f[2], 0, 32)
		if err != nil {
			return nil, fmt.Errorf("bad meter index %q", f[2])
		}
		c.Index = uint32(idx)
		for i := range c.Rates {
			v, err := strconv.ParseUint(f[3+i], 0, 64)
			if err != nil {
				return nil, fmt.Errorf("bad meter rate or burst %q", f[3+i])
			}
			c.Rates[i] = v
		}
	case "meter_set_rates", "meter_array_set_rates", "meter_get_rates":
		if err := parseMeterRates(c, f); err != nil { // meterrates.go
			return nil, err
		}
	case "register_reset":
		if len(f) != 2 {
			return nil, fmt.Errorf("register_reset <register>")
		}
		c.Register = f[1]
	case "register_read", "register_write":
		if f[0] == "register_read" && len(f) == 3 {
			f = append(f, "0")
			c.NoCheck = true
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("%s <register> <index> <value>", f[0])
		}
		c.Register = f[1]
		idx, err := strconv.ParseUint(f[2], 0, 32)
		if err != nil {
			return nil, fmt.Errorf("bad register index %q", f[2])
		}
		c.Index = uint32(idx)
		v, err := parseRegValue(f[3])
		if err != nil {
			return nil, err
		}
		c.Value = v
	case "mc_mgrp_create", "mc_mgrp_destroy", "mc_node_create", "mc_node_update", "mc_node_destroy",
		"mc_node_associate", "mc_node_dissociate", "mirroring_add", "mirroring_add_mc", "mirroring_delete", "mirroring_get":
		if err := parseRepl(c, f); err != nil { // replicate.go
			return nil, err
		}
	case "act_prof_create_member", "act_prof_modify_member", "act_prof_delete_member", "act_prof_create_group",
		"act_prof_delete_group", "act_prof_add_member_to_group", "act_prof_remove_member_from_group":
		if err := parseActProf(c, line, f); err != nil { // actprof.go
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown STF command %q", f[0])
	}
	return c, nil
}

// splitTop splits on spaces outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth := 0
	start := -1
	for i, ch := range s {
		switch {
		case ch == '(':
			depth++
		case ch == ')':
			depth--
		case (ch == ' ' || ch == '\t') && depth == 0:
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// parseRegValue parses a register value; negative values are two's
// complement (the runner truncates them to the register's width).
func parseRegValue(s string) (uint64, error) {
	if strings.HasPrefix(s, "-") {
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("bad register value %q", s)
		}
		return uint64(v), nil
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("bad register value %q", s)
	}
	return v, nil
}

// stackIndex is STF's spelling of a header stack element in a key name:
// extra$0.h is extra[0].h (p4c's bmv2stf.py translates it the same way).
var stackIndex = regexp.MustCompile(`\$([0-9]+)`)

// parseMatch parses one "field:value" of an add or setdefault command.
func parseMatch(m string) (p4info.Match, error) {
	i := strings.IndexByte(m, ':')
	if i <= 0 {
		return p4info.Match{}, fmt.Errorf("bad match %q (want field:value)", m)
	}
	return p4info.Match{Field: stackIndex.ReplaceAllString(m[:i], "[$1]"), Value: m[i+1:]}, nil
}

// maxPriority bounds STF priorities below the ranks of entries added
// without one (run.go).
const maxPriority = 1 << 29

// EntryPriority is the table runtime's priority (higher wins, 0 is none)
// of an add or direct_meter_set command's STF priority; 0 when it has none.
func (c *Cmd) EntryPriority() uint32 {
	if c.Priority < 0 {
		return 0
	}
	return uint32(c.Priority) + 1
}
