package slicer

import (
	"errors"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/schema/schematest"
)

// TestFormatsAgreeWithParsers: every string the slicer's formats match is
// one its rules' parsers accept (the document calls nothing valid that the
// API refuses as malformed).
func TestFormatsAgreeWithParsers(t *testing.T) {
	g := schematest.New(4)
	parsers := map[string]func(string) bool{
		"slicer-teid": func(s string) bool {
			_, _, err := parseTEID("teid", s)
			return err == nil || errors.Is(err, cube.ErrUnprocessable) // an inverted range, as the format's doc says
		},
		"slice-protocol": func(s string) bool {
			_, err := (&Rule{Proto: s}).parse(nil, nil)
			return err == nil
		},
	}
	for name, parse := range parsers {
		if s, bad := g.Refuted(name, 3000, parse); bad {
			t.Errorf("format %s: %q matches its pattern but does not parse", name, s)
		}
	}
}
