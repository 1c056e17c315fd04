package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
)

// snapshot writes a state of generation 1 with cube dd (one entry) and
// opens its journal.
func snapshot(t *testing.T) (string, *Journal) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.json")
	topo := cube.NewTopology()
	topo.Put(&cube.Cube{Name: "dd", Type: "ddos", Tables: map[string]map[string]json.RawMessage{
		"blacklist_src": {"198.18.0.1/32": json.RawMessage(`{"prefix":"198.18.0.1/32"}`)}}})
	if err := Save(path, &File{Gen: 1, Topology: topo, Slots: map[string]uint32{"dd": 0}}); err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournal(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return path, j
}

func put(key string) Record {
	return Record{Cube: "dd", Table: "blacklist_src", Key: key, Value: json.RawMessage(`{"prefix":"` + key + `"}`)}
}

func rows(t *testing.T, path string) (map[string]json.RawMessage, *File) {
	t.Helper()
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f.Topology.Lookup("dd").Tables["blacklist_src"], f
}

// failingFile writes only the first n bytes of each write, then fails.
type failingFile struct {
	dataFile
	n        int
	truncErr error
}

func (f *failingFile) Write(b []byte) (int, error) {
	if len(b) > f.n {
		w, _ := f.dataFile.Write(b[:f.n])
		return w, errors.New("no space left on device")
	}
	return f.dataFile.Write(b)
}

func (f *failingFile) Truncate(n int64) error {
	if f.truncErr != nil {
		return f.truncErr
	}
	return f.dataFile.Truncate(n)
}

// TestFailedAppendIsCutOff: an append that fails half written is cut off
// again: the next append is not glued to a torn line, and the journal loads
// with exactly the acknowledged changes.
func TestFailedAppendIsCutOff(t *testing.T) {
	path, j := snapshot(t)
	if err := j.Append([]Record{put("198.18.0.2/32")}); err != nil {
		t.Fatal(err)
	}
	real := j.f.(dataFile)
	j.f = &failingFile{dataFile: real, n: 30}
	if err := j.Append([]Record{put("198.18.0.3/32"), put("198.18.0.4/32")}); err == nil {
		t.Fatal("failing write acknowledged")
	}
	j.f = real
	if err := j.Append([]Record{put("198.18.0.5/32")}); err != nil {
		t.Fatal(err)
	}
	got, f := rows(t, path)
	if len(got) != 3 || got["198.18.0.2/32"] == nil || got["198.18.0.5/32"] == nil || len(f.Warnings) != 0 {
		t.Fatalf("rows %v, warnings %v", got, f.Warnings)
	}
}

// TestAppendThatCannotBeUndoneStopsTheJournal: when the cut itself fails,
// the journal refuses appends (rather than writing after a torn line) until
// a snapshot resets it.
func TestAppendThatCannotBeUndoneStopsTheJournal(t *testing.T) {
	_, j := snapshot(t)
	real := j.f.(dataFile)
	j.f = &failingFile{dataFile: real, n: 10, truncErr: errors.New("I/O error")}
	if err := j.Append([]Record{put("198.18.0.3/32")}); err == nil || !strings.Contains(err.Error(), "undoing it") {
		t.Fatalf("append: %v", err)
	}
	j.f = real
	if err := j.Append([]Record{put("198.18.0.4/32")}); err == nil || !j.Broken() {
		t.Fatalf("append after a failed cut: %v", err)
	}
	if err := j.Reset(2); err != nil || j.Broken() {
		t.Fatalf("reset: %v", err)
	}
	if err := j.Append([]Record{put("198.18.0.4/32")}); err != nil {
		t.Fatal(err)
	}
}

// TestUnfinishedAppendIsIgnoredWhole: a crash in the middle of a multi-record
// append leaves whole lines of it: none of them is applied.
func TestUnfinishedAppendIsIgnoredWhole(t *testing.T) {
	path, j := snapshot(t)
	if err := j.Append([]Record{put("198.18.0.2/32")}); err != nil {
		t.Fatal(err)
	}
	jf, _ := os.OpenFile(JournalPath(path), os.O_WRONLY|os.O_APPEND, 0)
	for _, r := range []Record{put("198.18.0.3/32"), put("198.18.0.4/32")} {
		r.Gen, r.Tx = 1, 2 // no End: the third record never made it
		b, _ := json.Marshal(r)
		jf.Write(append(b, '\n'))
	}
	jf.Close()
	got, f := rows(t, path)
	if len(got) != 2 || got["198.18.0.3/32"] != nil || len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "unfinished change of 2 records") {
		t.Fatalf("rows %v, warnings %v", got, f.Warnings)
	}
}

// TestGluedLineOfEarlierVersionsIsRecovered: journals written before
// failed appends were cut off can hold a torn record with the next one glued
// to it; the daemon starts, keeping the glued (acknowledged) record.
func TestGluedLineOfEarlierVersionsIsRecovered(t *testing.T) {
	path, _ := snapshot(t)
	legacy := `{"gen":1,"cube":"dd","table":"blacklist_src","key":"198.18.0.2/32","value":{"prefix":"198.18.0.2/32"}}` + "\n" +
		`{"gen":1,"cube":"dd","table":"blackl` +
		`{"gen":1,"cube":"dd","table":"blacklist_src","key":"198.18.0.3/32","value":{"prefix":"198.18.0.3/32"}}` + "\n" +
		`{"gen":1,"cube":"dd","table":"blacklist_src","key":"198.18.0.4/32","val`
	os.WriteFile(JournalPath(path), []byte(legacy), 0o600)
	got, f := rows(t, path)
	if len(got) != 3 || got["198.18.0.3/32"] == nil || len(f.Warnings) != 2 {
		t.Fatalf("rows %v, warnings %v", got, f.Warnings)
	}
}

// TestResidues: a journalled deletion leaves the old value as a residue (the
// kernel may still hold it), so does an intent, without changing the state.
func TestResidues(t *testing.T) {
	path, j := snapshot(t)
	del := Record{Cube: "dd", Table: "blacklist_src", Key: "198.18.0.1/32", Value: json.RawMessage("null"), Was: json.RawMessage(`{"prefix":"198.18.0.1/32"}`)}
	if err := j.Append([]Record{del}); err != nil {
		t.Fatal(err)
	}
	intent := put("198.18.0.7/32")
	intent.Intent = true
	if err := j.Append([]Record{intent}); err != nil {
		t.Fatal(err)
	}
	got, f := rows(t, path)
	if len(got) != 0 {
		t.Fatalf("rows %v", got)
	}
	if len(f.Residues) != 2 || f.Residues[0].Key != "198.18.0.1/32" || f.Residues[1].Key != "198.18.0.7/32" {
		t.Fatalf("residues %+v", f.Residues)
	}
}

// gatedFile holds every fsync until the test opens its gate, and records
// how many bytes each finished fsync covered.
type gatedFile struct {
	dataFile
	gate    chan struct{}
	mu      sync.Mutex
	written int64
	synced  int64
	fail    error
}

func (f *gatedFile) Write(b []byte) (int, error) {
	n, err := f.dataFile.Write(b)
	f.mu.Lock()
	f.written += int64(n)
	f.mu.Unlock()
	return n, err
}

func (f *gatedFile) Sync() error {
	f.mu.Lock()
	covers := f.written
	f.mu.Unlock()
	<-f.gate
	if f.fail != nil {
		return f.fail
	}
	if err := f.dataFile.Sync(); err != nil {
		return err
	}
	f.mu.Lock()
	f.synced = max(f.synced, covers)
	f.mu.Unlock()
	return nil
}

func (f *gatedFile) durable() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.synced
}

// writeAndSync is one writer: it appends a record, then waits until it is
// durable and checks that an fsync covered the record, which ends where
// the test says (it reads the offset after the write, before the next).
func writeAndSync(j *Journal, f *gatedFile, key string, end <-chan int64, done chan<- error) {
	tx, err := j.Write([]Record{put(key)})
	if err != nil {
		done <- err
		return
	}
	if err := j.Sync(tx); err != nil {
		done <- err
		return
	}
	if e, got := <-end, f.durable(); got < e {
		done <- fmt.Errorf("%s acknowledged with %d bytes synced, its record ends at %d", key, got, e)
		return
	}
	done <- nil
}

// writer starts writeAndSync and returns once its record is written.
func writer(j *Journal, f *gatedFile, key string, done chan<- error) {
	tx := j.Written()
	end := make(chan int64, 1)
	go writeAndSync(j, f, key, end, done)
	for j.Written() == tx {
		runtime.Gosched()
	}
	end <- j.Mark()
}

func (j *Journal) inSync() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.syncing
}

// TestGroupCommit: writers that wait for durability while an fsync runs
// share the next one (16 writers, 2 fsyncs), and none is told its change
// is durable before an fsync that began after its write has finished.
func TestGroupCommit(t *testing.T) {
	path, j := snapshot(t)
	f := &gatedFile{dataFile: j.f.(dataFile), gate: make(chan struct{})}
	j.f = f
	done := make(chan error, 16)
	writer(j, f, "198.18.0.100/32", done)
	for !j.inSync() {
		runtime.Gosched()
	}
	for i := 1; i < 16; i++ {
		writer(j, f, fmt.Sprintf("198.18.0.%d/32", 100+i), done)
	}
	select {
	case err := <-done:
		t.Fatalf("a writer returned while every fsync was held: %v", err)
	default:
	}
	close(f.gate)
	for range 16 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := j.Syncs(); n != 2 {
		t.Fatalf("16 writers waiting together made %d fsyncs, want 2 (the one running and one for all the others)", n)
	}
	got, _ := rows(t, path)
	if len(got) != 17 {
		t.Fatalf("%d rows after 16 acknowledged appends, want 17", len(got))
	}
}

// TestFailedSyncFailsTheWaiters: an fsync that fails leaves unknown what
// reached the disk: every writer waiting is told so, and the journal
// refuses writes until a snapshot holds the state (Reset).
func TestFailedSyncFailsTheWaiters(t *testing.T) {
	_, j := snapshot(t)
	f := &gatedFile{dataFile: j.f.(dataFile), gate: make(chan struct{}), fail: errors.New("EIO")}
	j.f = f
	done := make(chan error, 2)
	writer(j, f, "198.18.0.2/32", done)
	writer(j, f, "198.18.0.3/32", done)
	close(f.gate)
	for range 2 {
		if err := <-done; err == nil || !strings.Contains(err.Error(), "EIO") {
			t.Fatalf("a writer after a failed fsync: %v", err)
		}
	}
	if _, err := j.Write([]Record{put("198.18.0.4/32")}); err == nil || !j.Broken() {
		t.Fatalf("write after a failed fsync: %v", err)
	}
	if err := j.Reset(2); err != nil {
		t.Fatal(err)
	}
	f.fail = nil
	if err := j.Append([]Record{put("198.18.0.4/32")}); err != nil {
		t.Fatal(err)
	}
}

// TestResetReleasesWaiters: a snapshot holds everything written, so
// writers waiting for an fsync are released by the reset that follows it.
func TestResetReleasesWaiters(t *testing.T) {
	_, j := snapshot(t)
	f := &gatedFile{dataFile: j.f.(dataFile), gate: make(chan struct{})}
	j.f = f
	tx1, _ := j.Write([]Record{put("198.18.0.2/32")})
	first := make(chan error)
	go func() { first <- j.Sync(tx1) }() // the fsync held at the gate
	tx2, _ := j.Write([]Record{put("198.18.0.3/32")})
	second := make(chan error)
	go func() { second <- j.Sync(tx2) }()
	if err := j.Reset(2); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	close(f.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// TestKilledBetweenWriteAndAck: a writer killed (SIGKILL) after its change
// is written and before it is acknowledged loses nothing it acknowledged,
// and the restart finds the change it was making (the daemon has written
// it to the kernel by then: the two agree). The writer is this test binary
// run again.
func TestKilledBetweenWriteAndAck(t *testing.T) {
	if dir := os.Getenv("EDGENF_JOURNAL_CRASH_DIR"); dir != "" {
		path := filepath.Join(dir, "state.json")
		j, err := OpenJournal(path, 1)
		if err != nil {
			os.Exit(2)
		}
		for i := 2; ; i++ {
			tx, err := j.Write([]Record{put(fmt.Sprintf("198.18.0.%d/32", i))})
			if err != nil {
				os.Exit(2)
			}
			if i == 40 {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			if err := j.Sync(tx); err != nil {
				os.Exit(2)
			}
			fmt.Printf("acked 198.18.0.%d/32\n", i) // the acknowledgment
		}
	}
	path, j := snapshot(t)
	j.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledBetweenWriteAndAck$")
	cmd.Env = append(os.Environ(), "EDGENF_JOURNAL_CRASH_DIR="+filepath.Dir(path))
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the writer was not killed: %v\n%s", err, out)
	}
	acked := strings.Fields(string(out))
	got, f := rows(t, path)
	for i := 1; i < len(acked); i += 2 {
		if got[acked[i]] == nil {
			t.Errorf("%s was acknowledged, then lost", acked[i])
		}
	}
	if len(acked) != 2*38 || got["198.18.0.40/32"] == nil || len(got) != 40 || len(f.Warnings) != 0 {
		t.Fatalf("%d acknowledged, %d rows (want 40: the unacknowledged change was written), warnings %v", len(acked)/2, len(got), f.Warnings)
	}
}
