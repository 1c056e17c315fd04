package syntax

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: the lexer and parser never panic and every error has a
// position (preprocessing is FuzzCheck's, in package p4).
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../../examples/p4/*.p4")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	f.Add([]byte("#define X(a) a\nconst bit<8> x = X(1);\n"))
	f.Add([]byte("control C() { apply { if (a) { b = c[3:0] ++ d; } } }"))
	f.Fuzz(func(t *testing.T, src []byte) {
		srcs := NewSources()
		_, err := ParsePreprocessed(Plain("fuzz.p4", src, srcs), srcs)
		if err == nil {
			return
		}
		var el ErrorList
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
