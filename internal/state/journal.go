package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Record is one table entry changed after the snapshot of generation Gen:
// its new value, or null when it was deleted.
type Record struct {
	Gen   uint64          `json:"gen"`
	Cube  string          `json:"cube"`
	Table string          `json:"table"`
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// JournalPath is where the journal of a state file lives.
func JournalPath(statePath string) string { return statePath + ".journal" }

// Journal appends entry changes, one JSON line each, made durable before
// Append returns. A crash can only tear the last line, which Load ignores:
// that change was never acknowledged.
type Journal struct {
	f    *os.File
	gen  uint64
	size int64
}

// OpenJournal starts an empty journal for the snapshot of generation gen.
func OpenJournal(statePath string, gen uint64) (*Journal, error) {
	f, err := os.OpenFile(JournalPath(statePath), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &Journal{f: f, gen: gen}, nil
}

// Append writes records of the current generation durably.
func (j *Journal) Append(recs []Record) error {
	var b bytes.Buffer
	for _, r := range recs {
		r.Gen = j.gen
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	n, err := j.f.Write(b.Bytes())
	j.size += int64(n)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// Size is the bytes appended since the last Reset.
func (j *Journal) Size() int64 { return j.size }

// Reset empties the journal once the snapshot of generation gen holds
// everything it had. A crash before the truncation leaves records of an
// older generation, which Load skips.
func (j *Journal) Reset(gen uint64) error {
	j.gen, j.size = gen, 0
	return j.f.Truncate(0)
}

// Close closes the journal file.
func (j *Journal) Close() error { return j.f.Close() }

// replay applies the journal records of f's generation to f.
func replay(path string, f *File) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), len(b)+1)
	for line := 1; sc.Scan(); line++ {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			if !bytes.HasSuffix(b, []byte("\n")) && bytes.HasSuffix(b, sc.Bytes()) {
				return nil // torn last line: a change never acknowledged
			}
			return fmt.Errorf("state journal %s is corrupt at line %d: %w", path, line, err)
		}
		if r.Gen != f.Gen {
			continue
		}
		c, ok := f.Topology.Cubes[r.Cube]
		if !ok {
			return fmt.Errorf("state journal %s line %d: no cube %q in the state file", path, line, r.Cube)
		}
		c.SetRow(r.Table, r.Key, r.Value)
	}
	return sc.Err()
}
