package deploy

// Kubernetes JSON schemas for kubeconform, generated from the Go types of
// k8s.io/api (the types the API server itself decodes into), because this
// machine reaches no schema registry. What it generates is what
// kubeconform's published "-standalone-strict" schemas hold: every field
// with its JSON type, unknown fields refused, and required the fields the
// API's OpenAPI generator marks required (no omitempty in the JSON tag, no
// +optional in the field's comment).

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// schemaGroups are the API groups whose kinds get a schema.
var schemaGroups = []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, policyv1.AddToScheme, schedulingv1.AddToScheme}

// writeSchemas writes a schema per kind into dir, named as kubeconform's
// location template "{{ .ResourceKind }}{{ .KindSuffix }}.json" wants.
func writeSchemas(dir string) error {
	scheme := runtime.NewScheme()
	for _, add := range schemaGroups {
		if err := add(scheme); err != nil {
			return err
		}
	}
	optional, err := optionalFields()
	if err != nil {
		return err
	}
	for gvk, typ := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		g := &schemaGen{defs: map[string]any{}, optional: optional}
		root := g.object(typ)
		apiVersion := gvk.GroupVersion().String()
		props := root["properties"].(map[string]any)
		props["apiVersion"] = map[string]any{"type": "string", "enum": []string{apiVersion}}
		props["kind"] = map[string]any{"type": "string", "enum": []string{gvk.Kind}}
		root["required"] = appendUnique(root["required"], "apiVersion", "kind")
		root["$schema"] = "http://json-schema.org/draft-07/schema#"
		root["definitions"] = g.defs
		b, err := json.MarshalIndent(root, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, strings.ToLower(gvk.Kind)+kindSuffix(apiVersion)+".json"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// kindSuffix is kubeconform's: "-v1" for core, "-apps-v1", "-rbac-v1".
func kindSuffix(apiVersion string) string {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return "-" + strings.ToLower(group)
	}
	first, _, _ := strings.Cut(group, ".")
	return "-" + strings.ToLower(first) + "-" + strings.ToLower(version)
}

func appendUnique(list any, names ...string) []string {
	out, _ := list.([]string)
	for _, n := range names {
		found := false
		for _, x := range out {
			found = found || x == n
		}
		if !found {
			out = append(out, n)
		}
	}
	return out
}

// schemaGen builds one kind's schema; named structs go to definitions.
type schemaGen struct {
	defs     map[string]any
	optional map[string]bool // "pkgpath.Type.Field" with +optional
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	// types with their own JSON form
	special = map[reflect.Type]map[string]any{
		reflect.TypeFor[intstr.IntOrString](): {"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}},
		reflect.TypeFor[resource.Quantity]():  {"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}},
		reflect.TypeFor[metav1.Time]():        {"type": []string{"string", "null"}, "format": "date-time"},
		reflect.TypeFor[metav1.MicroTime]():   {"type": []string{"string", "null"}, "format": "date-time"},
		reflect.TypeFor[metav1.Duration]():    {"type": "string"},
	}
)

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	if s, ok := special[t]; ok {
		return s
	}
	if t.Kind() != reflect.Pointer && (t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler)) {
		return map[string]any{} // its own form (RawExtension, FieldsV1): anything
	}
	switch t.Kind() {
	case reflect.Pointer:
		return map[string]any{"anyOf": []any{g.schema(t.Elem()), map[string]any{"type": "null"}}}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": []string{"string", "null"}} // base64
		}
		return map[string]any{"type": []string{"array", "null"}, "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []string{"object", "null"}, "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		name := strings.ReplaceAll(t.PkgPath(), "/", ".") + "." + t.Name()
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = nil // recursion stops here
			g.defs[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/definitions/" + name}
	}
	return map[string]any{}
}

// object is a struct's schema: its fields (embedded ones inlined), no
// others.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			inner := g.object(f.Type)
			for k, v := range inner["properties"].(map[string]any) {
				props[k] = v
			}
			if r, ok := inner["required"].([]string); ok {
				required = append(required, r...)
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schema(f.Type)
		if !strings.Contains(opts, "omitempty") && !g.optional[t.PkgPath()+"."+t.Name()+"."+f.Name] {
			required = append(required, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// optionalFields reads the +optional markers of the API types' fields from
// their source, in the module cache.
func optionalFields() (map[string]bool, error) {
	pkgs := []string{"k8s.io/apimachinery/pkg/apis/meta/v1"}
	scheme := runtime.NewScheme()
	for _, add := range schemaGroups {
		add(scheme)
	}
	seen := map[string]bool{}
	for _, typ := range scheme.AllKnownTypes() {
		if p := typ.PkgPath(); !seen[p] {
			seen[p] = true
			pkgs = append(pkgs, p)
		}
	}
	out, err := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}} {{.Dir}}"}, pkgs...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	optional := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, dir, _ := strings.Cut(line, " ")
		fset := token.NewFileSet()
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return false
				}
				for _, field := range st.Fields.List {
					if field.Doc == nil || !strings.Contains(field.Doc.Text(), "+optional") {
						continue
					}
					for _, n := range field.Names {
						optional[pkg+"."+ts.Name.Name+"."+n.Name] = true
					}
				}
				return false
			})
		}
	}
	return optional, nil
}
