// Package topofile reads topology files (YAML or JSON) into the JSON
// document PUT /v1/topology takes, with the P4 programs they name read and
// put in: the daemon reads no file on a client's behalf. The CLI's `edgenf
// apply -f` and the daemon's -apply-file read files the same way.
package topofile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// Read reads a topology file; relative program paths are relative to its
// directory.
func Read(path string) (json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := Decode(b, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}

// Decode turns a topology file's content into the JSON document; program
// paths are relative to dir.
func Decode(b []byte, dir string) (json.RawMessage, error) {
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a mapping with `cubes:` (and optionally `attachments:`)")
	}
	cubes, _ := m["cubes"].([]any)
	for _, x := range cubes {
		c, _ := x.(map[string]any)
		cfg, _ := c["config"].(map[string]any)
		if c["type"] != "p4" {
			continue
		}
		if err := InlineProgram(cfg, dir); err != nil {
			return nil, fmt.Errorf("cube %v: %v", c["name"], err)
		}
	}
	return json.Marshal(doc)
}

// InlineProgram puts the text of the program p4 settings name (program,
// relative to dir) in, unless they have it.
func InlineProgram(cfg map[string]any, dir string) error {
	prog, _ := cfg["program"].(string)
	if prog == "" || cfg["source"] != nil {
		return nil
	}
	if !filepath.IsAbs(prog) {
		prog = filepath.Join(dir, prog)
	}
	ps, err := ProgramSettings(prog)
	if err != nil {
		return err
	}
	for k, v := range ps {
		cfg[k] = v
	}
	return nil
}

// ProgramSettings reads a P4 program into p4 settings: the source and the
// file's name (for its messages). The source is stored, so a restart runs
// exactly what was loaded; #include resolves on the daemon against its
// built-in files and -p4-include-dir.
func ProgramSettings(path string) (map[string]any, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return map[string]any{"program": filepath.Base(path), "source": string(src)}, nil
}
