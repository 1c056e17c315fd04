package p4

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// FuzzCheck: parsing, type checking, lowering and C generation never panic,
// and every error carries a position.
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob("../../examples/p4/*.p4")
	files2, _ := filepath.Glob("testdata/*.p4")
	for _, file := range append(files, files2...) {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		_, err := Compile(context.Background(), Options{Path: "fuzz.p4", Source: src, NoObject: true})
		if err == nil {
			return
		}
		var el syntax.ErrorList
		if !errors.As(err, &el) {
			t.Fatalf("error is not an ErrorList: %v", err)
		}
		for _, e := range el {
			if !e.Pos.IsValid() || e.Pos.File == "" {
				t.Fatalf("error without position: %v", e)
			}
		}
	})
}
