package lb

import (
	"testing"

	"github.com/edgenf/edgenf/internal/schema/schematest"
)

// TestServiceKeyFormatAgreesWithParser: every string the lb-service format
// matches, IPv4 or IPv6 VIP, is a key ParseServiceKey reads.
func TestServiceKeyFormatAgreesWithParser(t *testing.T) {
	g := schematest.New(7)
	read := func(s string) bool { _, _, _, err := ParseServiceKey(s); return err == nil }
	if s, bad := g.Refuted("lb-service", 3000, read); bad {
		t.Errorf("%q matches lb-service but ParseServiceKey refuses it", s)
	}
}
