package p4path

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/backend"
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// ---------- externs ----------

func (w *walker) method(c *syntax.Call, cr *sema.CallRef, st *state) {
	if cr.Instance != nil {
		w.externMethod(c, cr, st)
		return
	}
	// packet_in / packet_out
	switch cr.Method {
	case "extract":
		if len(c.Args) == 0 {
			return
		}
		arg := c.Args[0].Value
		t := w.info.Types[arg]
		name := w.canon(arg, st, true)
		b := headerBytes(t)
		if name != "" {
			st.hdrs[name] = hinst{off: st.off, bytes: b}
			st.order = append(st.order, name)
		}
		st.off += b
		what := fmt.Sprintf("parser: %s (%d bytes)", strings.TrimPrefix(name, "hdr."), b)
		st.use(TermParseHeader, 1, what)
		st.use(TermParseByte, float64(b), what)
	case "advance":
		if len(c.Args) > 0 {
			if v, ok := w.info.Consts[c.Args[0].Value]; ok {
				st.off += int(v.Int64() / 8)
			}
		}
		st.stmt()
	case "emit":
		if len(c.Args) > 0 {
			st.emitted = append(st.emitted, w.expand(c.Args[0].Value, st)...)
		}
	default:
		st.stmt()
	}
}

// expand lists the header instances an emit of e writes, in order.
func (w *walker) expand(e syntax.Expr, st *state) []string {
	name := w.canon(e, st, false)
	if name == "" {
		return nil
	}
	var out []string
	var rec func(n string, t sema.Type)
	rec = func(n string, t sema.Type) {
		switch x := t.(type) {
		case *sema.Struct:
			if x.Kind == "header" {
				out = append(out, n)
				return
			}
			for _, f := range x.Fields {
				rec(n+"."+f.Name, f.Type)
			}
		case *sema.Stack:
			for i := 0; i < x.Size; i++ {
				rec(fmt.Sprintf("%s[%d]", n, i), x.Elem)
			}
		}
	}
	rec(name, w.info.Types[e])
	return out
}

func (w *walker) externMethod(c *syntax.Call, cr *sema.CallRef, st *state) {
	w.clobber(c, cr, st)
	name := cr.Instance.Name
	if w.psaExternMethod(c, cr, st) { // psa.go
		return
	}
	switch cr.Instance.Extern.Name + "." + cr.Method {
	case "register.read":
		st.use(TermRegRead, 1, "register "+name+" read")
	case "register.write":
		st.use(TermRegWrite, 1, "register "+name+" write")
	case "counter.count":
		st.use(TermCounter, 1, "counter "+name)
	case "meter.execute_meter":
		st.use(TermMeter, 1, "meter "+name)
	case "direct_counter.count", "direct_meter.read":
		// priced with the table hit
	default:
		st.stmt()
	}
}

func (w *walker) externFunc(c *syntax.Call, cr *sema.CallRef, st *state) {
	w.clobber(c, cr, st)
	arg := func(i int) syntax.Expr {
		if i < len(c.Args) {
			return c.Args[i].Value
		}
		return nil
	}
	switch cr.Method {
	case "mark_to_drop":
		st.stmt()
		st.verdict = "drop"
		st.mcast = false
		st.facts["standard_metadata.egress_spec"] = big.NewInt(511)
		st.facts["standard_metadata.mcast_grp"] = big.NewInt(0)
	case "hash":
		w.hashUse(algoName(arg(1)), w.listBytes(arg(3)), st, "hash")
	case "random":
		st.use(TermRandom, 1, "random")
	case "digest":
		st.use(TermDigest, 1, "digest")
	case "log_msg":
		st.use(TermDigest, 1, "log_msg")
	case "clone", "clone3", "clone_preserving_field_list", "resubmit", "resubmit_preserving_field_list",
		"recirculate", "recirculate_preserving_field_list":
		st.use(TermClone, 1, cr.Method)
	case "verify_checksum", "update_checksum", "verify_checksum_with_payload", "update_checksum_with_payload":
		if w.eval(arg(0), st) == no {
			return
		}
		what := strings.TrimSuffix(cr.Method, "_with_payload")
		if h := w.canon(arg(2), st, false); h != "" {
			what += " " + strings.TrimPrefix(h, "hdr.")
		}
		algo := algoName(arg(3))
		if strings.HasSuffix(cr.Method, "_with_payload") {
			w.payloadUse(st, what)
		}
		if algo == "csum16" {
			st.use(TermCsum, 1, what)
			st.use(TermCsumByte, float64(w.listBytes(arg(1))), what)
			return
		}
		w.hashUse(algo, w.listBytes(arg(1)), st, what)
	case "assert", "assume", "static_assert", "truncate", "verify":
		st.stmt()
	default:
		st.stmt()
	}
}

// payloadUse prices the payload a *_with_payload checksum sums: the bytes
// of the frame after those the parser consumed, two at a time through the
// load helper (p4_payload_sum), at most 1500.
func (w *walker) payloadUse(st *state, what string) {
	frame := w.opt.FrameBytes
	if frame <= 0 {
		frame = DefaultFrameBytes
	}
	payload := min(max(frame-st.off, 0), 1500)
	what = fmt.Sprintf("%s: payload (%d bytes)", what, payload)
	st.use(TermCsumPayload, 1, what)
	st.use(TermCsumPayloadWord, float64((payload+1)/2), what)
}

// hashUse prices a hash of bytes with algo. A CRC costs what the
// generated code does (backend.CRCWork): its blocks of eight bytes hashed by
// slicing, and its bytes hashed one at a time.
func (w *walker) hashUse(algo string, bytes int, st *state, what string) {
	term := map[string]string{"crc16": TermCRC16, "crc32": TermCRC32}[algo]
	if term == "" {
		st.use(TermHashOther, 1, what+" "+algo)
		return
	}
	what += " " + algo
	blocks, serial := backend.CRCWork(algo, bytes)
	st.use(term, 1, what)
	if blocks > 0 {
		st.use(TermHashBlock, float64(blocks), what)
	}
	if serial > 0 {
		st.use(TermHashByte, float64(serial), what)
	}
}

func algoName(e syntax.Expr) string {
	if m, ok := e.(*syntax.Member); ok {
		return m.Name
	}
	return ""
}

// listBytes is the size of a field list (or a single field or header).
func (w *walker) listBytes(e syntax.Expr) int {
	if e == nil {
		return 0
	}
	if l, ok := e.(*syntax.List); ok {
		n := 0
		for _, el := range l.Elems {
			n += w.listBytes(el)
		}
		return n
	}
	t := w.info.Types[e]
	if st, ok := t.(*sema.Struct); ok && st.Kind == "header" {
		return st.Bits / 8
	}
	if wd := sema.Width(t); wd > 0 {
		return (wd + 7) / 8
	}
	return 0
}

func (w *walker) headerMethod(c *syntax.Call, cr *sema.CallRef, st *state) {
	h := w.canon(cr.Recv, st, false)
	switch cr.Method {
	case "isValid":
		return
	case "setValid":
		st.stmt()
		if h == "" {
			return
		}
		if _, ok := st.hdrs[h]; !ok {
			st.hdrs[h] = hinst{off: -1, bytes: headerBytes(w.info.Types[cr.Recv])}
		}
	case "setInvalid":
		st.stmt()
		if h != "" {
			delete(st.hdrs, h)
		}
	case "push_front", "pop_front":
		st.stmt()
		stk, ok := w.info.Types[cr.Recv].(*sema.Stack)
		if !ok || h == "" {
			return
		}
		n := cr.Count
		old := make([]*hinst, stk.Size)
		for i := range old {
			if v, ok := st.hdrs[fmt.Sprintf("%s[%d]", h, i)]; ok {
				v := v
				old[i] = &v
			}
			delete(st.hdrs, fmt.Sprintf("%s[%d]", h, i))
		}
		for i := 0; i < stk.Size; i++ {
			from := i - n
			if cr.Method == "pop_front" {
				from = i + n
			}
			if from >= 0 && from < stk.Size && old[from] != nil {
				st.hdrs[fmt.Sprintf("%s[%d]", h, i)] = *old[from]
			}
		}
		if cr.Method == "pop_front" {
			st.next[h] = max(st.next[h]-n, 0)
		} else {
			st.next[h] = min(st.next[h]+n, stk.Size)
		}
	default:
		st.stmt()
	}
}
