// Package p4test helps tests compile P4 programs from the repository's
// files.
package p4test

import (
	"testing"

	"github.com/edgenf/edgenf/internal/p4"
)

// File is p4.FromFile for a test (which fails if the file cannot be read),
// with changes to the options.
func File(t testing.TB, path string, change ...func(*p4.Options)) p4.Options {
	t.Helper()
	opt, err := p4.FromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range change {
		c(&opt)
	}
	return opt
}
