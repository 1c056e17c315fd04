package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/edgenf/edgenf/internal/cube"
)

// Change is one difference between two topologies.
type Change struct {
	Op     string `json:"op"`     // add, change, delete
	Kind   string `json:"kind"`   // cube, attachment
	Name   string `json:"name"`   // cube name or attachment point
	Detail string `json:"detail"` // what differs
}

func (c Change) String() string {
	sign := map[string]string{"add": "+", "change": "~", "delete": "-"}[c.Op]
	return fmt.Sprintf("%s %s %s: %s", sign, c.Kind, c.Name, c.Detail)
}

// Diff lists what turns a into b, in a stable order.
func Diff(a, b *cube.Topology) []Change {
	var out []Change
	for _, name := range union(a.CubeNames(), b.CubeNames()) {
		x, y := a.Lookup(name), b.Lookup(name)
		switch {
		case x == nil:
			out = append(out, Change{"add", "cube", name, fmt.Sprintf("%s at %s, %d ports", y.Type, y.Hook, len(y.Ports))})
		case y == nil:
			out = append(out, Change{"delete", "cube", name, x.Type})
		default:
			if d := cubeDiff(x, y); d != "" {
				out = append(out, Change{"change", "cube", name, d})
			}
		}
	}
	for _, point := range union(keys(a.Attachments), keys(b.Attachments)) {
		x, y := a.Attachments[point], b.Attachments[point]
		switch {
		case len(x) == 0 && len(y) > 0:
			out = append(out, Change{"add", "attachment", point, fmt.Sprint(y)})
		case len(y) == 0 && len(x) > 0:
			out = append(out, Change{"delete", "attachment", point, fmt.Sprint(x)})
		case !slices.Equal(x, y):
			out = append(out, Change{"change", "attachment", point, fmt.Sprintf("%v -> %v", x, y)})
		}
	}
	return out
}

func cubeDiff(x, y *cube.Cube) string {
	var parts []string
	if x.Type != y.Type || x.Hook != y.Hook {
		parts = append(parts, fmt.Sprintf("replaced (%s/%s -> %s/%s)", x.Type, x.Hook, y.Type, y.Hook))
	}
	if x.Tenant != y.Tenant {
		parts = append(parts, "tenant")
	}
	if !jsonEqual(x.Ports, y.Ports) {
		parts = append(parts, "ports")
	}
	if !jsonEqual(normRaw(x.Config), normRaw(y.Config)) {
		parts = append(parts, "config")
	}
	for _, t := range union(keys(x.Tables), keys(y.Tables)) {
		a, b := x.Tables[t], y.Tables[t]
		added, removed, changed := 0, 0, 0
		for k, v := range b {
			if old, ok := a[k]; !ok {
				added++
			} else if !jsonEqual(normRaw(old), normRaw(v)) {
				changed++
			}
		}
		for k := range a {
			if _, ok := b[k]; !ok {
				removed++
			}
		}
		if added+removed+changed > 0 {
			parts = append(parts, fmt.Sprintf("table %s +%d -%d ~%d", t, added, removed, changed))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprint(parts)
}

// normRaw makes semantically equal JSON compare equal (key order, spaces).
func normRaw(r json.RawMessage) any {
	if len(bytes.TrimSpace(r)) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(r, &v) != nil {
		return string(r)
	}
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil
	}
	return v
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func union(a, b []string) []string {
	set := map[string]bool{}
	for _, s := range append(a, b...) {
		set[s] = true
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
