package firewall

import (
	"errors"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"

	"github.com/edgenf/edgenf/internal/schema/schematest"
)

// TestFormatsAgreeWithParsers: every string the firewall's formats match is
// one the rule compiler accepts (the document calls nothing valid that the
// API refuses as malformed).
func TestFormatsAgreeWithParsers(t *testing.T) {
	g := schematest.New(5)
	parsers := map[string]func(string) bool{
		"fw-action":   func(s string) bool { _, err := (&Rule{ID: 1, Action: s}).compile(); return err == nil },
		"ip-protocol": func(s string) bool { _, err := (&Rule{ID: 1, Action: "drop", Proto: s}).compile(); return err == nil },
		"tcp-flags": func(s string) bool {
			_, err := (&Rule{ID: 1, Action: "drop", Proto: "tcp", TCPFlags: s}).compile()
			return err == nil || errors.Is(err, cube.ErrUnprocessable)
		},
		"ct-states": func(s string) bool { _, err := (&Rule{ID: 1, Action: "drop", State: s}).compile(); return err == nil },
		"icmp-type": func(s string) bool {
			_, err4 := icmpType(1, s)
			_, err6 := icmpType(58, s)
			return err4 == nil || err6 == nil
		},
	}
	for name, parse := range parsers {
		if s, bad := g.Refuted(name, 3000, parse); bad {
			t.Errorf("format %s: %q matches its pattern but does not parse", name, s)
		}
	}
}
