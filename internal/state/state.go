// Package state persists the daemon's desired state: a snapshot written
// atomically (temporary file, fsync, rename, fsync of the directory), so a
// crash leaves either the old or the new file, never a torn one, and a
// journal of the table entries changed since (journal.go), so a change to
// one entry of a big table costs one small append instead of a snapshot.
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Version of the file format.
const Version = 1

// File is what the daemon keeps across restarts.
type File struct {
	Version int `json:"version"`
	// Gen numbers snapshots: journal records of other generations are
	// older than the snapshot and ignored.
	Gen      uint64            `json:"gen,omitempty"`
	Topology *cube.Topology    `json:"topology"`
	Slots    map[string]uint32 `json:"slots"` // cube → patch panel slot

	// Residues, from the journal, are entries the kernel may hold beyond
	// the state: changes the daemon may have stopped in the middle of.
	Residues []Residue `json:"-"`
	// Warnings say what loading skipped (torn appends).
	Warnings []string `json:"-"`
	// Tenants are the tenants the administrator declared through the API
	// (those of the token file are read from it at every start).
	Tenants map[string]*tenant.Tenant `json:"tenants,omitempty"`
	// Endpoints are the workloads plugged into tenants' cubes (their
	// ports are in the topology).
	Endpoints map[string]*endpoint.Endpoint `json:"endpoints,omitempty"`
}

// Empty reports whether the state names no cube.
func (f *File) Empty() bool { return f.Topology.NumCubes() == 0 }

// Load reads the state file; a missing file is an empty state.
func Load(path string) (*File, error) {
	f := &File{Version: Version, Topology: cube.NewTopology(), Slots: map[string]uint32{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	jb, err := os.ReadFile(JournalPath(path))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return decode(path, b, jb)
}

// decode reads a state file's content and applies its journal's.
func decode(path string, b, journal []byte) (*File, error) {
	f := &File{Version: Version, Topology: cube.NewTopology(), Slots: map[string]uint32{}}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("state file %s is corrupt: %w", path, err)
	}
	if f.Version != Version {
		return nil, fmt.Errorf("state file %s has format version %d, this daemon reads %d", path, f.Version, Version)
	}
	if f.Topology == nil {
		f.Topology = cube.NewTopology()
	}
	f.Topology = f.Topology.Clone() // normalise nil maps
	if f.Slots == nil {
		f.Slots = map[string]uint32{}
	}
	if f.Tenants == nil {
		f.Tenants = map[string]*tenant.Tenant{}
	}
	if f.Endpoints == nil {
		f.Endpoints = map[string]*endpoint.Endpoint{}
	}
	if err := replay(JournalPath(path), journal, f); err != nil {
		return nil, err
	}
	return f, nil
}

// Save writes the state file atomically.
func Save(path string, f *File) error {
	f.Version = Version
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return write(path, b)
}

// SaveParts writes the same file as Save from cubes already marshalled (the
// engine keeps each cube's JSON from when it last changed, so a change does
// not re-encode the whole topology).
func SaveParts(path string, gen uint64, cubes map[string]json.RawMessage, attachments map[string][]string, slots map[string]uint32, tenants map[string]*tenant.Tenant, endpoints map[string]*endpoint.Endpoint) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"version":%d,`, Version)
	if gen != 0 {
		fmt.Fprintf(&b, `"gen":%d,`, gen)
	}
	b.WriteString(`"topology":{"cubes":{`)
	names := make([]string, 0, len(cubes))
	for n := range cubes {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(n)
		b.Write(k)
		b.WriteByte(':')
		b.Write(cubes[n])
	}
	b.WriteString(`}`)
	if len(attachments) > 0 {
		a, err := json.Marshal(attachments)
		if err != nil {
			return err
		}
		b.WriteString(`,"attachments":`)
		b.Write(a)
	}
	sl, err := json.Marshal(slots)
	if err != nil {
		return err
	}
	b.WriteString(`},"slots":`)
	b.Write(sl)
	if len(tenants) > 0 {
		tn, err := json.Marshal(tenants)
		if err != nil {
			return err
		}
		b.WriteString(`,"tenants":`)
		b.Write(tn)
	}
	if len(endpoints) > 0 {
		ep, err := json.Marshal(endpoints)
		if err != nil {
			return err
		}
		b.WriteString(`,"endpoints":`)
		b.Write(ep)
	}
	b.WriteString("}")
	return write(path, b.Bytes())
}

func write(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// WriteFileAtomic replaces a file as a whole or not at all: a temporary
// file beside it, synced, renamed over it, then the directory synced. A
// reader sees the old content or the new, never part of it; a crash leaves
// one of the two.
func WriteFileAtomic(path string, b []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
