package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"syscall"
)

// Record is one table entry changed after the snapshot of generation Gen:
// its new value, or null when it was deleted. A record of Kind KindCube or
// KindAttachment carries a whole cube or attachment point instead
// (topology.go): a topology change is journalled as what it changed.
type Record struct {
	Gen   uint64          `json:"gen"`
	Cube  string          `json:"cube"`
	Table string          `json:"table"`
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
	// Was is the entry's value before the change, when it had one: the
	// kernel may still hold it if the daemon stopped before writing the
	// change there (the journal is written first).
	Was json.RawMessage `json:"was,omitempty"`
	// Intent records change nothing in the state: they say the kernel may
	// hold this entry (Value) while a change is made to the kernel before
	// its snapshot is written.
	Intent bool `json:"intent,omitempty"`
	// Tx numbers the append the record belongs to; the append's last
	// record has End. An append a crash cut short has no End and is
	// ignored as a whole: it was never acknowledged. (Journals of earlier
	// versions have neither: each record stands alone.)
	Tx  uint64 `json:"tx,omitempty"`
	End bool   `json:"end,omitempty"`
	// Kind is empty for an entry record.
	Kind string `json:"kind,omitempty"`
	// Slot is a cube record's patch panel slot.
	Slot uint32 `json:"slot,omitempty"`
}

// Residue is an entry the kernel may hold although the state may not: the
// old value of a journalled change, or an intent. A restart deletes from the
// kernel each residue whose key the state does not have.
type Residue struct {
	Cube, Table, Key string
	Value            json.RawMessage
}

// JournalPath is where the journal of a state file lives.
func JournalPath(statePath string) string { return statePath + ".journal" }

// journalFile is what the journal needs of its file (tests inject faults).
type journalFile interface {
	Write([]byte) (int, error)
	Sync() error
	Truncate(int64) error
	Close() error
}

// dataFile syncs with fdatasync: every append grows the file, and
// fdatasync writes the size with the data (it is needed to read them back);
// only the times, which nothing reads, are left for later.
type dataFile struct{ *os.File }

func (f dataFile) Sync() error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// Journal appends entry changes, one JSON line each. An append is all or
// nothing: one that fails is cut off again, and one a crash tears is
// ignored when the journal is loaded.
//
// Durability is a group commit: Write puts a change in the file (the page
// cache: a killed daemon loses nothing written) and Sync waits until it is
// on disk. Writers waiting at the same time share one fsync: the first
// syncs everything written so far while the next ones gather behind it.
// The daemon writes the journal, then the kernel, then waits for Sync
// before it answers, without holding its lock: a change is acknowledged
// only once durable, and the fsync no longer serialises changes. (The
// kernel's maps do not outlive a machine crash either, so a change lost
// from the page cache with them was never acknowledged.)
type Journal struct {
	mu   sync.Mutex
	cond sync.Cond // signalled when a sync ends
	f    journalFile
	gen  uint64
	tx   uint64 // the last transaction written
	size int64
	// durable is the last transaction on disk: synced, or held by the
	// snapshot that reset the journal.
	durable uint64
	// syncing: a writer is in fsync (without mu); the others wait for it.
	syncing bool
	syncs   uint64
	// broken is why the journal cannot be appended to (a failed append
	// could not be cut off, or a sync failed and what is on disk is
	// unknown); the next snapshot (Reset) starts afresh.
	broken error
}

// OpenJournal starts an empty journal for the snapshot of generation gen.
func OpenJournal(statePath string, gen uint64) (*Journal, error) {
	f, err := os.OpenFile(JournalPath(statePath), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	return newJournal(dataFile{f}, gen), nil
}

func newJournal(f journalFile, gen uint64) *Journal {
	j := &Journal{f: f, gen: gen}
	j.cond.L = &j.mu
	return j
}

// Append writes records of the current generation durably, as one
// transaction: Write then Sync. One that cannot be synced is cut off
// again. (For a writer that holds its lock anyway; others Write, let the
// lock go, then Sync.)
func (j *Journal) Append(recs []Record) error {
	mark := j.Mark()
	tx, err := j.Write(recs)
	if err != nil {
		return err
	}
	if err := j.Sync(tx); err != nil {
		if rerr := j.Rollback(mark); rerr != nil {
			return fmt.Errorf("%w (and undoing it: %v)", err, rerr)
		}
		return err
	}
	return nil
}

// Write appends records of the current generation as one transaction, not
// yet durable: Sync(tx) waits for that. It returns the transaction's number
// (0 when there were no records: nothing to wait for).
func (j *Journal) Write(recs []Record) (uint64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return 0, fmt.Errorf("journal unusable since %v: the next snapshot starts a new one", j.broken)
	}
	if len(recs) == 0 {
		return 0, nil
	}
	tx := j.tx + 1
	var b bytes.Buffer
	for i, r := range recs {
		r.Gen, r.Tx, r.End = j.gen, tx, i == len(recs)-1
		line, err := json.Marshal(r)
		if err != nil {
			return 0, err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	mark := j.size
	n, err := j.f.Write(b.Bytes())
	j.size += int64(n)
	if err != nil {
		// Cut the partial append off, so the next one does not start
		// glued to a torn line.
		if rerr := j.rollback(mark); rerr != nil {
			return 0, fmt.Errorf("journal: %w (and undoing it: %v)", err, rerr)
		}
		return 0, fmt.Errorf("journal: %w", err)
	}
	j.tx = tx
	return tx, nil
}

// locked reads a field of j under its lock.
func locked[T any](j *Journal, field *T) T {
	j.mu.Lock()
	defer j.mu.Unlock()
	return *field
}

// Written is the number of the last transaction written: Sync(Written())
// waits for everything written so far.
func (j *Journal) Written() uint64 { return locked(j, &j.tx) }

// Sync returns once transaction tx is on disk. Callers waiting together
// share one fsync; one that finds none running starts it, for everything
// written until then. A failed fsync leaves what reached the disk unknown:
// every transaction not yet durable fails, and the journal refuses writes
// until a snapshot (Reset) holds them.
func (j *Journal) Sync(tx uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.durable < tx {
		if j.broken != nil {
			return fmt.Errorf("journal: %w", j.broken)
		}
		if j.syncing {
			j.cond.Wait()
			continue
		}
		j.syncing = true
		upTo := j.tx
		j.mu.Unlock()
		err := j.f.Sync()
		j.mu.Lock()
		j.syncing = false
		j.syncs++
		if err != nil && j.broken == nil {
			j.broken = err
		} else if err == nil {
			j.durable = max(j.durable, upTo)
		}
		j.cond.Broadcast()
	}
	return nil
}

// Syncs counts the fsyncs Sync made.
func (j *Journal) Syncs() uint64 { return locked(j, &j.syncs) }

// Mark is the journal's size, for Rollback.
func (j *Journal) Mark() int64 { return locked(j, &j.size) }

// Rollback removes what was appended after mark (a change the kernel then
// refused: its writer holds the lock no other writer passes, so nothing
// else was appended since). If that fails the journal is unusable until
// the next Reset.
func (j *Journal) Rollback(mark int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.rollback(mark)
}

func (j *Journal) rollback(mark int64) error {
	if err := j.f.Truncate(mark); err != nil {
		j.broken = err
		return err
	}
	if err := j.f.Sync(); err != nil {
		j.broken = err
		return err
	}
	j.size = mark
	return nil
}

// Broken reports whether the journal refuses appends until Reset.
func (j *Journal) Broken() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.broken != nil
}

// Size is the bytes appended since the last Reset.
func (j *Journal) Size() int64 { return locked(j, &j.size) }

// Reset empties the journal once the snapshot of generation gen holds
// everything it had: every transaction written is durable (waiters are
// released). A crash before the truncation leaves records of an older
// generation, which Load skips.
func (j *Journal) Reset(gen uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.gen, j.size = gen, 0
	j.durable = j.tx
	j.cond.Broadcast()
	if err := j.f.Truncate(0); err != nil {
		// Appends would follow the old records, where Rollback's marks
		// do not point: refuse them until a snapshot truncates.
		j.broken = err
		return err
	}
	j.broken = nil
	return nil
}

// Close closes the journal file.
func (j *Journal) Close() error { return j.f.Close() }

// replay applies the records of journal b (of file path) of f's
// generation to f, and collects the residues they leave and what it had to
// skip.
func replay(path string, b []byte, f *File) error {
	var pending []Record // records of the transaction being read
	apply := func(recs []Record) error {
		for _, r := range recs {
			if r.Gen != f.Gen {
				continue
			}
			if r.Kind != "" {
				if err := applyTopology(f, r); err != nil {
					return fmt.Errorf("state journal %s: %w", path, err)
				}
				continue
			}
			c := f.Topology.Lookup(r.Cube)
			ok := c != nil
			if r.Intent {
				if len(r.Value) > 0 && string(r.Value) != "null" {
					f.Residues = append(f.Residues, Residue{r.Cube, r.Table, r.Key, r.Value})
				}
				continue
			}
			if !ok {
				return fmt.Errorf("state journal %s: no cube %q in the state file", path, r.Cube)
			}
			if len(r.Was) > 0 && string(r.Was) != "null" {
				f.Residues = append(f.Residues, Residue{r.Cube, r.Table, r.Key, r.Was})
			}
			c.SetRow(r.Table, r.Key, r.Value)
		}
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), len(b)+1)
	for line := 1; sc.Scan(); line++ {
		recs, note, err := parseLine(sc.Bytes(), !bytes.HasSuffix(b, []byte("\n")) && bytes.HasSuffix(b, sc.Bytes()))
		if err != nil {
			return fmt.Errorf("state journal %s is corrupt at line %d: %w", path, line, err)
		}
		if note != "" {
			f.Warnings = append(f.Warnings, fmt.Sprintf("state journal %s line %d: %s", path, line, note))
		}
		for _, r := range recs {
			if r.Tx == 0 { // a record of an earlier version: stands alone
				if err := apply([]Record{r}); err != nil {
					return fmt.Errorf("%w (line %d)", err, line)
				}
				continue
			}
			if len(pending) > 0 && pending[0].Tx != r.Tx {
				f.Warnings = append(f.Warnings, fmt.Sprintf("state journal %s: ignored an unfinished change of %d records before line %d", path, len(pending), line))
				pending = nil
			}
			pending = append(pending, r)
			if r.End {
				if err := apply(pending); err != nil {
					return fmt.Errorf("%w (line %d)", err, line)
				}
				pending = nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(pending) > 0 {
		f.Warnings = append(f.Warnings, fmt.Sprintf("state journal %s: ignored an unfinished change of %d records at its end (the daemon stopped while writing it; it was never acknowledged)", path, len(pending)))
	}
	return nil
}

// parseLine reads one journal line. The last line of a journal that does
// not end in a newline is a torn append: skipped. A line of an earlier
// version may hold a torn record with the next append glued to it: the
// glued record is recovered.
func parseLine(line []byte, last bool) ([]Record, string, error) {
	var r Record
	err := json.Unmarshal(line, &r)
	if err == nil {
		return []Record{r}, "", nil
	}
	if last {
		return nil, "ignored a torn last line (an append cut short; never acknowledged)", nil
	}
	// `{"gen":` starts every record (json.Marshal keeps field order) and
	// cannot occur unescaped inside a JSON string.
	start := []byte(`{"gen":`)
	for i := 1; i < len(line); i++ {
		j := bytes.Index(line[i:], start)
		if j < 0 {
			break
		}
		i += j
		if json.Unmarshal(line[i:], &r) == nil {
			return []Record{r}, "recovered a record glued to a torn one (the torn one was never acknowledged)", nil
		}
	}
	return nil, "", err
}
