package backend_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/p4test"
)

func genC(t *testing.T, path string) string {
	t.Helper()
	res, err := p4.Compile(context.Background(), p4test.File(t, path, func(o *p4.Options) { o.NoObject = true }))
	if err != nil {
		t.Fatal(err)
	}
	return res.C
}

// inPlace returns the statements of the deparser's in-place branch for the
// header at C path c ("" if the header has none).
func inPlace(t *testing.T, src, c string) string {
	t.Helper()
	i := strings.Index(src, "if ("+c+".valid) {\n\t\t__u8 *b = (__u8 *)ctx_data(ctx)")
	if i < 0 {
		return ""
	}
	rest := src[i:]
	if e := strings.Index(rest, "\t\to += "); e >= 0 {
		rest = rest[:e] // the header's block
	}
	j := strings.Index(rest, "== (int)o + pd) {")
	k := strings.Index(rest, "} else {")
	if j < 0 || k < j {
		return ""
	}
	return rest[j:k]
}

// The deparser writes a header still where it was parsed only in the fields
// the program may write (STF: testdata/deparse.stf checks the bytes).
func TestDeparseWritesWhatChanged(t *testing.T) {
	l2 := genC(t, "../../../examples/p4/l2switch.p4")
	for _, h := range []string{"s->hdr.f_ethernet", "s->hdr.f_vlan"} {
		b := inPlace(t, l2, h)
		if !strings.Contains(b, "never written") || strings.Contains(b, "p4_stbe") {
			t.Errorf("l2switch: %s in place: %q, want no writes", h, b)
		}
	}
	l3 := genC(t, "../../../examples/p4/l3router.p4")
	eth, ip := inPlace(t, l3, "s->hdr.f_ethernet"), inPlace(t, l3, "s->hdr.f_ipv4")
	for _, f := range []string{"f_dstAddr", "f_srcAddr"} {
		if !strings.Contains(eth, f) {
			t.Errorf("l3router: ethernet in place does not write %s: %q", f, eth)
		}
	}
	if strings.Contains(eth, "f_etherType") {
		t.Errorf("l3router: ethernet in place writes etherType: %q", eth)
	}
	if n := strings.Count(ip, "p4_stbe"); n != 2 || !strings.Contains(ip, "f_ttl") || !strings.Contains(ip, "f_hdrChecksum") {
		t.Errorf("l3router: ipv4 in place: %q, want ttl and hdrChecksum only", ip)
	}
	// parsed headers record where they came from
	if !regexp.MustCompile(`s->p4_poff\[\d\] = off \+ 1;`).MatchString(l3) {
		t.Error("l3router: the parser does not record header offsets")
	}

	// every way of writing a header field counts; nil: no in-place branch
	// (written whole, or all fields may change, or never parsed)
	dp := genC(t, "../testdata/deparse.p4")
	for h, fs := range map[string][]string{
		"s->hdr.f_ethernet": nil, // assigned whole
		"s->hdr.f_ipv4":     {"f_totalLen", "f_identification", "f_ttl", "f_protocol", "f_hdrChecksum"},
		"s->hdr.f_shim":     nil, // every field set when it is added
		"s->hdr.f_shim2":    nil, // never parsed
		"s->hdr.f_udp":      {"f_checksum"},
	} {
		b := inPlace(t, dp, h)
		if fs == nil {
			if b != "" {
				t.Errorf("deparse.p4: %s has an in-place branch: %q", h, b)
			}
			continue
		}
		if n := strings.Count(b, "p4_stbe"); n != len(fs) {
			t.Errorf("deparse.p4: %s in place writes %d fields, want %v: %q", h, n, fs, b)
		}
		for _, f := range fs {
			if !strings.Contains(b, "."+f+",") {
				t.Errorf("deparse.p4: %s in place does not write %s: %q", h, f, b)
			}
		}
	}
}
