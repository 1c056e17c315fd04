package lb

import (
	"testing"

	"github.com/edgenf/edgenf/internal/schema"
	"github.com/edgenf/edgenf/internal/schema/schematest"
)

// TestServiceKeyFormatAgreesWithParser: every string the lb-service format
// matches, IPv4 or IPv6 VIP, is a key ParseServiceKey reads.
func TestServiceKeyFormatAgreesWithParser(t *testing.T) {
	g := schematest.New(7)
	for range 3000 {
		s := g.FromPattern(schema.Formats["lb-service"].Pattern)
		if _, _, _, err := ParseServiceKey(s); err != nil {
			t.Fatalf("%q matches lb-service but: %v", s, err)
		}
	}
}
