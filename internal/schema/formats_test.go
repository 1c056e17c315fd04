package schema_test

import (
	"math/rand"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/schema"
	"github.com/edgenf/edgenf/internal/schema/schematest"
)

// parsers are the Go readings every string of a format must pass.
var parsers = map[string]func(s string) bool{
	"name":   func(s string) bool { return cube.CheckName("", s) == nil },
	"ifname": func(s string) bool { e, err := cube.ParseEndpoint(s); return err == nil && !e.IsCube() },
	"peer":   func(s string) bool { _, err := cube.ParseEndpoint(s); return err == nil },
	"mac": func(s string) bool {
		hw, err := net.ParseMAC(s)
		return err == nil && len(hw) == 6
	},
	"mac-unicast": func(s string) bool {
		hw, err := net.ParseMAC(s)
		return err == nil && len(hw) == 6 && hw[0]&1 == 0 && string(hw) != "\x00\x00\x00\x00\x00\x00"
	},
	"ipv4": func(s string) bool { a, err := netip.ParseAddr(s); return err == nil && a.Is4() },
	"ipv6": func(s string) bool { a, err := netip.ParseAddr(s); return err == nil && a.Is6() && a.Zone() == "" },
	"ip":   func(s string) bool { _, err := netip.ParseAddr(s); return err == nil },
	"ipv4-prefix": func(s string) bool {
		p, err := netip.ParsePrefix(s)
		return err == nil && p.Addr().Is4()
	},
	"ipv4-host": ipv4Host,
	"ip-prefix": func(s string) bool { _, err := netip.ParsePrefix(s); return err == nil },
	"ip-host": func(s string) bool {
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			return err == nil && !p.Addr().Is4In6()
		}
		_, err := netip.ParseAddr(s)
		return err == nil
	},
	"port-address": func(s string) bool {
		p, err := netip.ParsePrefix(s)
		a := p.Addr()
		return err == nil && !a.IsUnspecified() && !a.IsMulticast() && !a.IsLoopback() && a != netip.AddrFrom4([4]byte{255, 255, 255, 255})
	},
	"ipv4-interface": func(s string) bool {
		p, err := netip.ParsePrefix(s)
		a := p.Addr()
		return err == nil && a.Is4() && p.Bits() >= 8 && !a.IsUnspecified() && !a.IsMulticast() && !a.IsLoopback()
	},
	"port": func(s string) bool { _, err := strconv.ParseUint(s, 10, 16); return err == nil },
	"port-range": func(s string) bool {
		for _, part := range strings.SplitN(s, "-", 2) {
			if _, err := strconv.ParseUint(part, 10, 16); err != nil {
				return false
			}
		}
		return true
	},
	"port1-range": func(s string) bool {
		for i, part := range strings.SplitN(s, "-", 2) {
			if v, err := strconv.ParseUint(part, 10, 16); err != nil || i == 0 && v == 0 {
				return false
			}
		}
		return true
	},
	"ipv4-match": func(s string) bool { return s == "any" || ipv4Host(s) },
	"ip-match": func(s string) bool {
		if s == "any" {
			return true
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			return err == nil && !p.Addr().Is4In6()
		}
		a, err := netip.ParseAddr(s)
		return err == nil && !a.Is4In6() && a.Zone() == ""
	},
	"vlan-list": func(s string) bool {
		for _, item := range strings.Split(s, ",") {
			for _, part := range strings.SplitN(item, "-", 2) {
				if v, err := strconv.Atoi(part); err != nil || v < 1 || v > 4094 {
					return false
				}
			}
		}
		return true
	},
}

func ipv4Host(s string) bool {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return err == nil && p.Addr().Is4()
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}

// TestFormatsAgreeWithParsers: every string a format's pattern matches is
// one the Go code that reads such strings accepts, and the patterns use
// only what ECMA-262 (the document's readers) and RE2 read alike.
func TestFormatsAgreeWithParsers(t *testing.T) {
	g := schematest.New(2)
	notShared := regexp.MustCompile(`\\[dDsSwWbBpPzZAQE]|\(\?`)
	for name, f := range schema.Formats {
		parse, ok := parsers[name]
		if !ok {
			t.Errorf("format %s: no parser to check it against", name)
			continue
		}
		if !strings.HasPrefix(f.Pattern, "^") || !strings.HasSuffix(f.Pattern, "$") {
			t.Errorf("format %s: pattern %s is not anchored", name, f.Pattern)
		}
		if m := notShared.FindString(f.Pattern); m != "" {
			t.Errorf("format %s: pattern uses %s", name, m)
		}
		for range 3000 {
			if s := g.FromPattern(f.Pattern); !parse(s) {
				t.Errorf("format %s: %q matches its pattern but does not parse", name, s)
				break
			}
		}
	}
}

// TestFormatsMatchCanonicalForms: what the API answers — addresses,
// prefixes and MACs in the canonical form Go prints them in — matches the
// formats, so answers conform to the document too.
func TestFormatsMatchCanonicalForms(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	res := map[string]*regexp.Regexp{}
	for name, f := range schema.Formats {
		res[name] = regexp.MustCompile(f.Pattern)
	}
	match := func(format, s string) {
		t.Helper()
		if !res[format].MatchString(s) {
			t.Errorf("format %s does not match %q", format, s)
		}
	}
	for range 3000 {
		var b16 [16]byte
		r.Read(b16[:])
		for i := r.Intn(16); i < 16 && r.Intn(2) == 0; i++ {
			b16[i] = 0 // runs of zeros: "::"
		}
		v6 := netip.AddrFrom16(b16)
		if v6.Is4In6() {
			continue
		}
		var b4 [4]byte
		r.Read(b4[:])
		v4 := netip.AddrFrom4(b4)
		p6 := netip.PrefixFrom(v6, r.Intn(129)).Masked()
		p4 := netip.PrefixFrom(v4, r.Intn(33)).Masked()
		for _, s := range []string{v4.String(), p4.String(), v6.String(), p6.String()} {
			match("ip-host", s)
		}
		match("ipv4", v4.String())
		match("ipv4-prefix", p4.String())
		match("ipv4-host", p4.String())
		match("ipv4-match", p4.String())
		match("ip", v6.String())
		hw := net.HardwareAddr(b16[:6])
		match("mac", hw.String())
		hw[0] = hw[0]&^1 | 2
		match("mac-unicast", hw.String())
	}
	for _, s := range []string{"::", "::1", "2001:db8::/32", "5c:bf0e:b8::acf4/128", "::/0", "198.18.0.0/15"} {
		match("ip-host", s)
	}
}
