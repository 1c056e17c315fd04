package api

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
)

// Schema is a JSON Schema (the subset OpenAPI 3.0 uses).
type Schema struct {
	Type                 string             `json:"type,omitempty"`
	Format               string             `json:"format,omitempty"`
	Description          string             `json:"description,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	AdditionalProperties *Schema            `json:"additionalProperties,omitempty"`
	Minimum              *float64           `json:"minimum,omitempty"`
	Maximum              *float64           `json:"maximum,omitempty"`
}

var rawType = reflect.TypeOf(json.RawMessage{})

// SchemaOf derives the schema of a Go value (pointer or not) from its type
// and json tags. Fields without omitempty are required.
func SchemaOf(v any) *Schema {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return schemaOfType(t, 0)
}

func schemaOfType(t reflect.Type, depth int) *Schema {
	if depth > 8 {
		return &Schema{}
	}
	if t == rawType {
		return &Schema{Description: "any JSON value"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOfType(t.Elem(), depth)
	case reflect.Bool:
		return &Schema{Type: "boolean"}
	case reflect.String:
		return &Schema{Type: "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &Schema{Type: "integer", Format: "int64"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		zero := 0.0
		max := float64(uint64(1)<<(t.Bits()-1))*2 - 1
		return &Schema{Type: "integer", Minimum: &zero, Maximum: &max}
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number"}
	case reflect.Slice, reflect.Array:
		return &Schema{Type: "array", Items: schemaOfType(t.Elem(), depth+1)}
	case reflect.Map:
		return &Schema{Type: "object", AdditionalProperties: schemaOfType(t.Elem(), depth+1)}
	case reflect.Struct:
		if t.String() == "time.Time" {
			return &Schema{Type: "string", Format: "date-time"}
		}
		s := &Schema{Type: "object", Properties: map[string]*Schema{}}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" {
				inner := schemaOfType(f.Type, depth+1)
				for k, v := range inner.Properties {
					s.Properties[k] = v
				}
				s.Required = append(s.Required, inner.Required...)
				continue
			}
			if name == "" {
				name = f.Name
			}
			fs := schemaOfType(f.Type, depth+1)
			if d := f.Tag.Get("doc"); d != "" {
				fs.Description = d
			}
			s.Properties[name] = fs
			if !strings.Contains(opts, "omitempty") {
				s.Required = append(s.Required, name)
			}
		}
		return s
	}
	return &Schema{}
}

type op struct {
	Summary     string              `json:"summary"`
	OperationID string              `json:"operationId,omitempty"`
	Parameters  []param             `json:"parameters,omitempty"`
	RequestBody *body               `json:"requestBody,omitempty"`
	Responses   map[string]response `json:"responses"`
}

type param struct {
	Name     string  `json:"name"`
	In       string  `json:"in"`
	Required bool    `json:"required"`
	Schema   *Schema `json:"schema"`
}

type body struct {
	Required bool                 `json:"required"`
	Content  map[string]mediaType `json:"content"`
}

type mediaType struct {
	Schema *Schema `json:"schema"`
}

type response struct {
	Description string               `json:"description"`
	Content     map[string]mediaType `json:"content,omitempty"`
}

func jsonBody(s *Schema) *body {
	return &body{Required: true, Content: map[string]mediaType{"application/json": {s}}}
}

func ok(desc string, s *Schema) map[string]response {
	r := response{Description: desc}
	if s != nil {
		r.Content = map[string]mediaType{"application/json": {s}}
	}
	return map[string]response{
		"200":     r,
		"default": {Description: "error", Content: map[string]mediaType{"application/json": {errorSchema}}},
	}
}

var errorSchema = SchemaOf(struct {
	Error httpError `json:"error"`
}{})

func pathParams(names ...string) []param {
	out := make([]param, 0, len(names))
	for _, n := range names {
		out = append(out, param{Name: n, In: "path", Required: true, Schema: &Schema{Type: "string"}})
	}
	return out
}

// OpenAPI builds the OpenAPI 3 document of the API, with one set of typed
// paths per registered NF type (/v1/nf/<type>/{cube}/...).
func OpenAPI() map[string]any {
	paths := map[string]map[string]op{}
	add := func(path, method string, o op) {
		if paths[path] == nil {
			paths[path] = map[string]op{}
		}
		paths[path][method] = o
	}
	cubeSchema := SchemaOf(&cube.Cube{})
	add("/v1/types", "get", op{Summary: "List NF types and their models", Responses: ok("types", &Schema{Type: "array", Items: SchemaOf(&TypeInfo{})})})
	add("/v1/topology", "get", op{Summary: "The whole desired state, as a topology document", Responses: ok("topology", SchemaOf(&cube.Document{}))})
	add("/v1/topology", "put", op{Summary: "Make a topology document the whole desired state (declarative apply); ?dry_run=true only reports the changes",
		RequestBody: jsonBody(SchemaOf(&cube.Document{})), Responses: ok("changes", nil)})
	add("/v1/cubes", "get", op{Summary: "List cubes", Responses: ok("cubes", &Schema{Type: "array", Items: cubeSchema})})
	add("/v1/cubes", "post", op{Summary: "Create a cube", RequestBody: jsonBody(SchemaOf(&cubeRequest{})), Responses: ok("the cube", cubeSchema)})
	add("/v1/cubes/{cube}", "get", op{Summary: "Get a cube", Parameters: pathParams("cube"), Responses: ok("the cube", cubeSchema)})
	add("/v1/cubes/{cube}", "delete", op{Summary: "Delete a cube", Parameters: pathParams("cube"), Responses: ok("deleted", nil)})
	add("/v1/cubes/{cube}/ports", "post", op{Summary: "Add a port", Parameters: pathParams("cube"), RequestBody: jsonBody(SchemaOf(&portRequest{})), Responses: ok("the port", SchemaOf(&cube.Port{}))})
	add("/v1/cubes/{cube}/ports/{port}", "patch", op{Summary: "Change a port's peer, MAC, addresses or settings", Parameters: pathParams("cube", "port"), Responses: ok("the port", SchemaOf(&cube.Port{}))})
	add("/v1/cubes/{cube}/ports/{port}", "delete", op{Summary: "Delete a port", Parameters: pathParams("cube", "port"), Responses: ok("deleted", nil)})
	add("/v1/cubes/{cube}/stats", "get", op{Summary: "Per-port packet, byte and drop counters", Parameters: pathParams("cube"), Responses: ok("counters", nil)})
	add("/v1/cubes/{cube}/swap", "post", op{Summary: "Hot-swap the cube's program, keeping its maps", Parameters: pathParams("cube"), Responses: ok("swapped", nil)})
	add("/v1/attachments", "post", op{Summary: "Attach a transparent cube to a cube port or interface", RequestBody: jsonBody(SchemaOf(&Attachment{})), Responses: ok("attached", nil)})
	add("/v1/attachments/{cube}", "delete", op{Summary: "Detach a transparent cube", Parameters: pathParams("cube"), Responses: ok("detached", nil)})
	add("/v1/whoami", "get", op{Summary: "Who the request authenticated as: the administrator or a tenant", Responses: ok("identity", SchemaOf(&Identity{}))})
	add("/v1/graph", "get", op{Summary: "The topology the caller may see, without table entries or settings (the dashboard's graph)", Responses: ok("graph", SchemaOf(&Graph{}))})
	add("/v1/stats", "get", op{Summary: "Every visible cube's per-port counters, read at one time", Responses: ok("counters", SchemaOf(&Stats{}))})
	for _, t := range cube.Types() {
		base := "/v1/nf/" + t.Name + "/{cube}"
		if t.Config != nil {
			add(base+"/config", "get", op{Summary: t.Name + " settings", Parameters: pathParams("cube"), Responses: ok("settings", SchemaOf(t.Config))})
			add(base+"/config", "put", op{Summary: "Replace " + t.Name + " settings", Parameters: pathParams("cube"), RequestBody: jsonBody(SchemaOf(t.Config)), Responses: ok("settings", SchemaOf(t.Config))})
		}
		for _, tb := range t.Tables {
			item := SchemaOf(tb.Item)
			p := base + "/tables/" + tb.Name
			add(p, "get", op{Summary: "List " + t.Name + " " + tb.Name + ": " + tb.Doc, Parameters: pathParams("cube"), Responses: ok("entries", &Schema{Type: "array", Items: item})})
			add(p, "post", op{Summary: "Add one entry or an array of entries (all or none)", Parameters: pathParams("cube"), RequestBody: jsonBody(item), Responses: ok("added", item)})
			add(p, "put", op{Summary: "Replace the whole table atomically", Parameters: pathParams("cube"), RequestBody: jsonBody(&Schema{Type: "array", Items: item}), Responses: ok("replaced", nil)})
			add(p+"/{key}", "get", op{Summary: "Get one entry", Parameters: pathParams("cube", "key"), Responses: ok("entry", item)})
			add(p+"/{key}", "put", op{Summary: "Add or replace one entry", Parameters: pathParams("cube", "key"), RequestBody: jsonBody(item), Responses: ok("entry", item)})
			add(p+"/{key}", "delete", op{Summary: "Delete one entry", Parameters: pathParams("cube", "key"), Responses: ok("deleted", nil)})
		}
		for _, v := range t.Views {
			var sc *Schema
			if v.Item != nil {
				sc = &Schema{Type: "array", Items: SchemaOf(v.Item)}
			}
			add(base+"/views/"+v.Name, "get", op{Summary: v.Doc, Parameters: pathParams("cube"), Responses: ok(v.Name, sc)})
		}
		for _, a := range t.Actions {
			o := op{Summary: a.Doc, Parameters: pathParams("cube"), Responses: ok("result", nil)}
			if a.Args != nil {
				o.RequestBody = jsonBody(SchemaOf(a.Args))
			}
			add(base+"/actions/"+a.Name, "post", o)
		}
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]string{
			"title":       "edgenf API",
			"version":     "1",
			"description": "Network functions in the Linux kernel (eBPF), chained into service chains. Errors: {\"error\": {code, field, message}}.",
		},
		"paths": paths,
	}
}
