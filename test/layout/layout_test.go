// Package layout holds checks on the source tree itself: rules of the
// developers' guide that a machine keeps better than a reviewer.
package layout

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxLines is the length past which a Go file must say why it is one file.
const maxLines = 600

// reasonRE is how such a file says it, in its first reasonWindow lines.
var reasonRE = regexp.MustCompile(`(?i)(is long because|over 600 lines)`)

const reasonWindow = 30

// TestLongFilesSayWhy: a Go file over ~600 lines is split by job, or says at
// its top why it is one job (issue 13). Generated files and tests are exempt.
func TestLongFilesSayWhy(t *testing.T) {
	root := filepath.Join("..", "..")
	var bad []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "build", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		lines, head, generated, err := scan(p)
		if err != nil {
			return err
		}
		if lines > maxLines && !generated && !reasonRE.MatchString(head) {
			rel, _ := filepath.Rel(root, p)
			bad = append(bad, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range bad {
		t.Errorf("%s: over %d lines with no reason at its top (split it by job, or say why it is one: \"This file is long because ...\")", p, maxLines)
	}
}

// scan counts a file's lines and returns its first reasonWindow lines, and
// whether it carries Go's "Code generated ... DO NOT EDIT." mark.
func scan(p string) (lines int, head string, generated bool, err error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, "", false, err
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines++
		line := sc.Text()
		if lines <= reasonWindow {
			b.WriteString(line)
			b.WriteByte('\n')
		}
		if strings.HasPrefix(line, "// Code generated ") && strings.HasSuffix(line, " DO NOT EDIT.") {
			generated = true
		}
	}
	return lines, b.String(), generated, sc.Err()
}
