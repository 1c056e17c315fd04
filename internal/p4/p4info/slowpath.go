package p4info

import (
	"fmt"
	"math/big"
	"net"
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
)

// ControllerPacketMetadata mirrors p4.config.v1.ControllerPacketMetadata:
// the fields of a header annotated @controller_header("packet_in") or
// ("packet_out").
type ControllerPacketMetadata struct {
	Preamble Preamble       `json:"preamble"`
	Metadata []CtrlMetadata `json:"metadata,omitempty"`
}

// CtrlMetadata mirrors ControllerPacketMetadata.Metadata.
type CtrlMetadata struct {
	ID       uint32 `json:"id"`
	Name     string `json:"name"`
	Bitwidth int    `json:"bitwidth"`
}

// Digest mirrors p4.config.v1.Digest.
type Digest struct {
	Preamble Preamble `json:"preamble"`
	TypeSpec TypeSpec `json:"typeSpec"`
}

// TypeSpec is the subset of p4.config.v1.P4DataTypeSpec used by digests and
// their struct members.
type TypeSpec struct {
	Bitstring    *BitstringSpec `json:"bitstring,omitempty"`
	Bool         *struct{}      `json:"bool,omitempty"`
	Struct       *NamedType     `json:"struct,omitempty"`
	Serializable *NamedType     `json:"serializableEnum,omitempty"`
	Error        *struct{}      `json:"error,omitempty"`
}

// NamedType is p4.config.v1.P4NamedType.
type NamedType struct {
	Name string `json:"name"`
}

// TypeInfo is the subset of p4.config.v1.P4TypeInfo edgenf produces: the
// structs digests carry.
type TypeInfo struct {
	Structs map[string]*StructType `json:"structs,omitempty"`
}

// StructType is p4.config.v1.P4StructTypeSpec.
type StructType struct {
	Members []StructMember `json:"members"`
}

// StructMember is P4StructTypeSpec.Member.
type StructMember struct {
	Name     string   `json:"name"`
	TypeSpec TypeSpec `json:"typeSpec"`
}

// SlowPathLayout is how a program's slow-path messages are laid out. A
// message is a punt record (struct edgenf_punt_hdr: reason 2 digest / 3 log,
// arg its index here, pkt_len the data length) followed by the data: each
// field big-endian in ceil(bitwidth/8) bytes at its offset.
type SlowPathLayout struct {
	// StatsMap: PERCPU_ARRAY of u64: digests sent, digests lost, logs
	// sent, logs lost (ring full or over the per-CPU rate limit).
	StatsMap  string            `json:"statsMap,omitempty"`
	LogRate   int               `json:"logRatePerCpu,omitempty"`
	Digests   []*DigestLayout   `json:"digests,omitempty"`
	Logs      []*LogLayout      `json:"logs,omitempty"`
	PacketIn  *CtrlHeaderLayout `json:"packetIn,omitempty"`
	PacketOut *CtrlHeaderLayout `json:"packetOut,omitempty"`
}

// DigestLayout is one digest type.
type DigestLayout struct {
	Name   string         `json:"name"`
	ID     uint32         `json:"id"`
	Index  int            `json:"index"`
	Bytes  int            `json:"bytes"`
	Fields []ir.DataField `json:"fields"`
}

// LogLayout is one log_msg call.
type LogLayout struct {
	Index  int            `json:"index"`
	Format string         `json:"format"`
	Pos    string         `json:"pos"`
	Bytes  int            `json:"bytes"`
	Fields []ir.DataField `json:"fields,omitempty"`
}

// CtrlHeaderLayout is a controller header: its fields, MSB first.
type CtrlHeaderLayout struct {
	Name   string      `json:"name"`
	ID     uint32      `json:"id"`
	Bytes  int         `json:"bytes"`
	Fields []CtrlField `json:"fields"`
}

// CtrlField is a field of a controller header.
type CtrlField struct {
	ID        uint32 `json:"id"`
	Name      string `json:"name"`
	Width     int    `json:"bitwidth"`
	BitOffset int    `json:"bitOffset"`
}

func addSlowPath(m *P4Info, p *ir.Program) {
	m.Edgenf.CPUPort = ir.DefaultCPUPort
	sp := ir.BuildSlowPath(p, nil)
	if len(sp.Digests) == 0 && len(sp.Logs) == 0 && len(sp.Headers) == 0 {
		return
	}
	l := &SlowPathLayout{}
	if len(sp.Digests) > 0 || len(sp.Logs) > 0 {
		l.StatsMap = ir.SlowPathStatsMap
		l.LogRate = ir.LogRatePerCPU
	}
	for _, h := range sp.Headers {
		cm := &ControllerPacketMetadata{Preamble: Preamble{ID: h.ID, Name: h.Name, Alias: h.Name, Annotations: h.Annots}}
		hl := &CtrlHeaderLayout{Name: h.Name, ID: h.ID, Bytes: h.Bytes}
		for _, f := range h.Fields {
			cm.Metadata = append(cm.Metadata, CtrlMetadata{ID: f.ID, Name: f.Name, Bitwidth: f.Width})
			hl.Fields = append(hl.Fields, CtrlField{ID: f.ID, Name: f.Name, Width: f.Width, BitOffset: f.BitOffset})
		}
		m.ControllerPacketMetadata = append(m.ControllerPacketMetadata, cm)
		switch h.Name {
		case "packet_in":
			l.PacketIn = hl
		case "packet_out":
			l.PacketOut = hl
		}
	}
	for _, d := range sp.Digests {
		m.Digests = append(m.Digests, &Digest{Preamble: Preamble{ID: d.ID, Name: d.Name, Alias: d.Name},
			TypeSpec: TypeSpec{Struct: &NamedType{Name: d.Name}}})
		if m.TypeInfo == nil {
			m.TypeInfo = &TypeInfo{Structs: map[string]*StructType{}}
		}
		addStructType(m.TypeInfo, d.Type)
		l.Digests = append(l.Digests, &DigestLayout{Name: d.Name, ID: d.ID, Index: d.Index, Bytes: d.Bytes, Fields: d.Fields})
	}
	for _, g := range sp.Logs {
		l.Logs = append(l.Logs, &LogLayout{Index: g.Index, Format: g.Format, Pos: g.Pos.String(), Bytes: g.Bytes, Fields: g.Fields})
	}
	m.Edgenf.SlowPath = l
}

func addStructType(ti *TypeInfo, st *sema.Struct) {
	if _, ok := ti.Structs[st.Name]; ok {
		return
	}
	s := &StructType{}
	ti.Structs[st.Name] = s
	for _, f := range st.Fields {
		var ts TypeSpec
		switch x := f.Type.(type) {
		case *sema.Struct:
			ts.Struct = &NamedType{Name: x.Name}
			addStructType(ti, x)
		case *sema.Bool:
			ts.Bool = &struct{}{}
		case *sema.Bits:
			if x.Signed {
				ts.Bitstring = &BitstringSpec{Int: &BitwidthSpec{Bitwidth: x.W}}
			} else {
				ts.Bitstring = &BitstringSpec{Bit: &BitwidthSpec{Bitwidth: x.W}}
			}
		case *sema.Enum:
			if x.Under != nil {
				ts.Serializable = &NamedType{Name: x.Name}
			} else {
				ts.Bitstring = &BitstringSpec{Bit: &BitwidthSpec{Bitwidth: 32}}
			}
		case *sema.ErrorT:
			ts.Error = &struct{}{}
		}
		s.Members = append(s.Members, StructMember{Name: f.Name, TypeSpec: ts})
	}
}

// Digest returns a digest by name or id (as "0x..." or decimal), or nil.
func (l *SlowPathLayout) Digest(name string) *DigestLayout {
	if l == nil {
		return nil
	}
	for _, d := range l.Digests {
		if d.Name == name || fmt.Sprint(d.ID) == name || fmt.Sprintf("0x%08x", d.ID) == name {
			return d
		}
	}
	return nil
}

// DigestAt returns the digest with index i (the punt record's arg), or nil.
func (l *SlowPathLayout) DigestAt(i uint32) *DigestLayout {
	if l == nil || int(i) >= len(l.Digests) {
		return nil
	}
	return l.Digests[i]
}

// LogAt returns the log message with index i, or nil.
func (l *SlowPathLayout) LogAt(i uint32) *LogLayout {
	if l == nil || int(i) >= len(l.Logs) {
		return nil
	}
	return l.Logs[i]
}

// FieldValue is a decoded field: its name, its value as text (a MAC for
// 48-bit fields, decimal up to 64 bits, 0x hex above) and its bytes.
type FieldValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Bytes []byte `json:"-"`
}

// FormatField renders a field value.
func FormatField(f ir.DataField, b []byte) string {
	v := new(big.Int).SetBytes(b)
	v.And(v, ones(f.Width))
	switch {
	case f.Bool:
		return fmt.Sprint(v.Sign() != 0)
	case f.Width == 48 && !f.Signed:
		var hw [6]byte
		v.FillBytes(hw[:])
		return net.HardwareAddr(hw[:]).String()
	case f.Signed && v.Bit(f.Width-1) == 1:
		return new(big.Int).Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(f.Width))).String()
	case f.Width <= 64:
		return v.String()
	}
	return "0x" + v.Text(16)
}

func decodeFields(fields []ir.DataField, n int, data []byte) ([]FieldValue, error) {
	if len(data) < n {
		return nil, fmt.Errorf("message is %d bytes, want %d", len(data), n)
	}
	out := make([]FieldValue, 0, len(fields))
	for _, f := range fields {
		if f.Offset+f.Size > len(data) {
			return nil, fmt.Errorf("field %s lies outside the message", f.Name)
		}
		b := data[f.Offset : f.Offset+f.Size]
		out = append(out, FieldValue{Name: f.Name, Value: FormatField(f, b), Bytes: append([]byte(nil), b...)})
	}
	return out, nil
}

// Decode turns the data of a digest message into its fields.
func (d *DigestLayout) Decode(data []byte) ([]FieldValue, error) {
	fv, err := decodeFields(d.Fields, d.Bytes, data)
	if err != nil {
		return nil, fmt.Errorf("digest %s: %w", d.Name, err)
	}
	return fv, nil
}

// Render renders a log message: each {} becomes the next value.
func (l *LogLayout) Render(data []byte) (string, error) {
	fv, err := decodeFields(l.Fields, l.Bytes, data)
	if err != nil {
		return "", fmt.Errorf("log message %d: %w", l.Index, err)
	}
	var b strings.Builder
	rest := l.Format
	for _, v := range fv {
		i := strings.Index(rest, "{}")
		if i < 0 {
			break
		}
		b.WriteString(rest[:i])
		b.WriteString(v.Value)
		rest = rest[i+2:]
	}
	b.WriteString(rest)
	return b.String(), nil
}

// Field returns a field by name.
func (h *CtrlHeaderLayout) Field(name string) *CtrlField {
	for i := range h.Fields {
		if h.Fields[i].Name == name {
			return &h.Fields[i]
		}
	}
	return nil
}

// Decode splits a frame that starts with this header into the header's
// fields (decimal values) and the rest of the frame.
func (h *CtrlHeaderLayout) Decode(frame []byte) (map[string]string, []byte, error) {
	if len(frame) < h.Bytes {
		return nil, nil, fmt.Errorf("%s: frame of %d bytes is shorter than the %d-byte header", h.Name, len(frame), h.Bytes)
	}
	v := new(big.Int).SetBytes(frame[:h.Bytes])
	total := h.Bytes * 8
	out := map[string]string{}
	for _, f := range h.Fields {
		x := new(big.Int).Rsh(v, uint(total-f.BitOffset-f.Width))
		x.And(x, ones(f.Width))
		out[f.Name] = x.String()
	}
	return out, frame[h.Bytes:], nil
}

// Encode packs metadata values (names of the header's fields; values as
// ParseValue takes them; fields left out are 0) into the header's bytes.
func (h *CtrlHeaderLayout) Encode(values map[string]string) ([]byte, error) {
	v := new(big.Int)
	total := h.Bytes * 8
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := h.Field(n)
		if f == nil {
			var known []string
			for _, f := range h.Fields {
				known = append(known, fmt.Sprintf("%s:%d", f.Name, f.Width))
			}
			return nil, fmt.Errorf("%s has no field %q (fields: %s)", h.Name, n, strings.Join(known, " "))
		}
		x, err := ParseValue(values[n], f.Width)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %v", h.Name, n, err)
		}
		v.Or(v, new(big.Int).Lsh(x, uint(total-f.BitOffset-f.Width)))
	}
	out := make([]byte, h.Bytes)
	v.FillBytes(out)
	return out, nil
}
