package slicer

import (
	"errors"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/schema"
	"github.com/edgenf/edgenf/internal/schema/schematest"
)

// TestFormatsAgreeWithParsers: every string the slicer's formats match is
// one its rules' parsers accept (the document calls nothing valid that the
// API refuses as malformed).
func TestFormatsAgreeWithParsers(t *testing.T) {
	g := schematest.New(4)
	parsers := map[string]func(string) error{
		"slicer-teid": func(s string) error {
			_, _, err := parseTEID("teid", s)
			if err != nil && errors.Is(err, cube.ErrUnprocessable) {
				return nil // an inverted range, as the format's doc says
			}
			return err
		},
		"slice-protocol": func(s string) error {
			_, err := (&Rule{Proto: s}).parse(nil, nil)
			return err
		},
	}
	for name, parse := range parsers {
		for range 3000 {
			s := g.FromPattern(schema.Formats[name].Pattern)
			if err := parse(s); err != nil {
				t.Errorf("format %s: %q matches its pattern but: %v", name, s, err)
				break
			}
		}
	}
}
