package schema

import (
	"fmt"
	"strings"
)

// Format is a kind of string of the model (a name, an address, a MAC, a
// port range): its pattern, anchored, in the syntax ECMA-262 and Go's RE2
// share (no \d, \s or \w: their meanings differ), and what it is.
type Format struct {
	Pattern string
	Doc     string
	// OpenAPI is the document's standard format of the same strings, if
	// any (ipv4, ipv6).
	OpenAPI string
}

// Building blocks of the patterns, unanchored.
const (
	// Dec8 is a decimal 0..255 without leading zeros (as netip reads
	// IPv4 addresses).
	Dec8 = `(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])`
	// IPv4 is a dotted-quad IPv4 address.
	IPv4 = Dec8 + `(\.` + Dec8 + `){3}`
	// Len4 and Len6 are prefix lengths without leading zeros.
	Len4 = `(3[0-2]|[12]?[0-9])`
	Len6 = `(12[0-8]|1[01][0-9]|[1-9]?[0-9])`
	h16  = `[0-9A-Fa-f]{1,4}`
	// UnicastIPv4 is an IPv4 address of a host: 1..223 but 127 first.
	UnicastIPv4 = `(22[0-3]|2[01][0-9]|1[3-9][0-9]|12[0-689]|1[01][0-9]|[1-9][0-9]?)(\.` + Dec8 + `){3}`
	// Len4Host is the prefix length of a host's address on a subnet a
	// router serves, 8..32.
	Len4Host = `(3[0-2]|[12][0-9]|[89])`
)

// IPv6 is an IPv6 address in the text forms of RFC 4291 2.2 (1 and 2: no
// embedded IPv4 address, no zone).
var IPv6 = "(" + ipv6(h16) + `|:((:` + h16 + `){1,7}|:))`

// UnicastIPv6 is an IPv6 address that is neither multicast, loopback nor
// unspecified: its first group is written, does not start with 0 and, of
// four digits, not with f.
var UnicastIPv6 = ipv6(`[1-9A-Ea-e][0-9A-Fa-f]{0,3}`)

// ipv6 is the text forms of an IPv6 address whose first group is written
// and matches first.
func ipv6(first string) string {
	alts := []string{
		first + `(:` + h16 + `){7}`,
		first + `(:` + h16 + `){0,6}::`,
		first + `(:` + h16 + `){0,5}::` + h16,
		first + `(:` + h16 + `){0,4}::` + h16 + `(:` + h16 + `)?`,
		first + `(:` + h16 + `){0,3}::` + h16 + `(:` + h16 + `){0,2}`,
		first + `(:` + h16 + `){0,2}::` + h16 + `(:` + h16 + `){0,3}`,
		first + `(:` + h16 + `)?::` + h16 + `(:` + h16 + `){0,4}`,
		first + `::` + h16 + `(:` + h16 + `){0,5}`,
	}
	return "(" + strings.Join(alts, "|") + ")"
}

const (
	// Port is a TCP or UDP port, 0..65535; Port1 is 1..65535.
	Port  = `(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}|0)`
	Port1 = `(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})`
	// VID is a VLAN id, 1..4094.
	VID = `(409[0-4]|40[0-8][0-9]|[1-3][0-9]{3}|[1-9][0-9]{0,2})`
	// Name is a cube, port, tenant or backend name (cube.CheckName).
	Name = `[A-Za-z][A-Za-z0-9_-]{0,31}`
	// Ifname is a Linux interface name: printable ASCII but '/', ':'
	// and space (cube.ParseEndpoint).
	Ifname = `[!-.0-9;-~]{1,15}`
	hex2   = `[0-9A-Fa-f]{2}`
)

// Anchored anchors an unanchored pattern.
func Anchored(p string) string { return "^(" + p + ")$" }

// CaseFold is a pattern matching word in any case.
func CaseFold(word string) string {
	var b strings.Builder
	for _, r := range word {
		lo, up := strings.ToLower(string(r)), strings.ToUpper(string(r))
		if lo == up {
			b.WriteRune(r)
			continue
		}
		b.WriteString("[" + lo + up + "]")
	}
	return b.String()
}

// mac is a MAC address with one separator throughout (as net.ParseMAC
// reads it); unicast: the group bit clear and not all zero.
func mac(unicast bool) string {
	var alts []string
	for _, sep := range []string{":", "-"} {
		if !unicast {
			alts = append(alts, hex2+"("+sep+hex2+"){5}")
			continue
		}
		even := `[02468ACEace]`
		alts = append(alts, `([1-9A-Fa-f]`+even+`|0[2468ACEace])(`+sep+hex2+`){5}`)
		// a first octet of 00: some later octet is not
		nonzero := `(0[1-9A-Fa-f]|[1-9A-Fa-f][0-9A-Fa-f])`
		for i := 1; i <= 5; i++ {
			alts = append(alts, fmt.Sprintf(`00(%s00){%d}%s%s(%s%s){%d}`, sep, i-1, sep, nonzero, sep, hex2, 5-i))
		}
	}
	return strings.Join(alts, "|")
}

// Register adds a format an NF type's model uses; NF packages call it from
// init, next to the code that reads such strings.
func Register(name string, f Format) {
	if _, dup := Formats[name]; dup {
		panic("schema: format " + name + " registered twice")
	}
	Formats[name] = f
}

// Formats are the kinds of strings the model's tags name: the framework's
// here, NF types' from Register.
var Formats = map[string]Format{
	"name": {Pattern: Anchored(Name),
		Doc: "1-32 letters, digits, '-' or '_', starting with a letter"},
	"ifname": {Pattern: Anchored(Ifname),
		Doc: "a Linux interface name"},
	"peer": {Pattern: Anchored(Name + ":" + Name + "|" + Ifname),
		Doc: `another cube's port, "cube:port", or a Linux interface (a port is not its own peer: 422)`},
	"mac": {Pattern: Anchored(mac(false)),
		Doc: "a MAC address, aa:bb:cc:dd:ee:ff (or with '-')"},
	"mac-unicast": {Pattern: Anchored(mac(true)),
		Doc: "a unicast MAC address (group bit clear, not all zero), aa:bb:cc:dd:ee:ff (or with '-')"},
	"ipv4": {Pattern: Anchored(IPv4), OpenAPI: "ipv4",
		Doc: "an IPv4 address"},
	"ipv6": {Pattern: Anchored(IPv6),
		Doc: "an IPv6 address"},
	"ip": {Pattern: Anchored(IPv4 + "|" + IPv6),
		Doc: "an IPv4 or IPv6 address"},
	"ipv4-prefix": {Pattern: Anchored(IPv4 + "/" + Len4),
		Doc: "an IPv4 prefix, address/length, with no bits set after the length (422 otherwise)"},
	"ip-prefix": {Pattern: Anchored(IPv4 + "/" + Len4 + "|" + IPv6 + "/" + Len6),
		Doc: "an address and a prefix length, IPv4 or IPv6: 198.18.0.2/24"},
	"ipv4-host": {Pattern: Anchored(IPv4 + "(/" + Len4 + ")?"),
		Doc: "an IPv4 address or prefix (address/length), with no bits set after the length (422 otherwise)"},
	"ip-host": {Pattern: Anchored(IPv4 + "(/" + Len4 + ")?|" + IPv6 + "(/" + Len6 + ")?"),
		Doc: "an IPv4 or IPv6 address or prefix (address/length), with no bits set after the length (422 otherwise)"},
	"port-address": {Pattern: Anchored(UnicastIPv4 + "/" + Len4 + "|" + UnicastIPv6 + "/" + Len6),
		Doc: "the port's address and its subnet's length, e.g. 198.18.0.1/24: a unicast host address, not the subnet's broadcast address (422 otherwise)"},
	"ipv4-interface": {Pattern: Anchored(UnicastIPv4 + "/" + Len4Host),
		Doc: "an IPv4 address and its subnet's length, 8..32, e.g. 198.18.0.1/24: neither the subnet's network nor its broadcast address (422 otherwise)"},
	"port": {Pattern: Anchored(Port),
		Doc: "a TCP or UDP port, 0..65535"},
	"port-range": {Pattern: Anchored(Port + "(-" + Port + ")?"),
		Doc: "a port, 0..65535, or a range lo-hi with lo <= hi (422 otherwise)"},
	"port1-range": {Pattern: Anchored(Port1 + "(-" + Port + ")?"),
		Doc: "a port, 1..65535, or a range lo-hi with 1 <= lo <= hi (422 otherwise)"},
	"ipv4-match": {Pattern: Anchored("any|" + IPv4 + "(/" + Len4 + ")?"),
		Doc: "an IPv4 address or prefix (no bits set after the length: 422 otherwise), or any"},
	"ip-match": {Pattern: Anchored("any|" + IPv4 + "(/" + Len4 + ")?|" + IPv6 + "(/" + Len6 + ")?"),
		Doc: "an IPv4 or IPv6 address or prefix (no bits set after the length: 422 otherwise), or any"},
	"vlan-list": {Pattern: Anchored(VID + "(-" + VID + ")?(," + VID + "(-" + VID + ")?)*"),
		Doc: "VLAN ids and ranges, 1..4094: 10,20,100-199 (a range lo <= hi, 422 otherwise); absent: all"},
}
