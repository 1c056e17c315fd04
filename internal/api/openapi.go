package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Schema is a JSON Schema (the subset OpenAPI 3.0 uses). The API decodes
// bodies strictly, so objects allow no other properties: what the document
// says is valid is what the API accepts, as far as a schema can say it
// (that a peer exists is for the API to tell).
type Schema struct {
	Type                 string             `json:"type,omitempty"`
	Format               string             `json:"format,omitempty"`
	Description          string             `json:"description,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	Items                *Schema            `json:"items,omitempty"`
	AdditionalProperties any                `json:"additionalProperties,omitempty"` // *Schema, or false
	Minimum              *json.Number       `json:"minimum,omitempty"`
	Maximum              *json.Number       `json:"maximum,omitempty"`
	MinLength            *int               `json:"minLength,omitempty"`
	MaxLength            *int               `json:"maxLength,omitempty"`
	MaxItems             *int               `json:"maxItems,omitempty"`
	MinItems             *int               `json:"minItems,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`
	Enum                 []string           `json:"enum,omitempty"`
	Nullable             bool               `json:"nullable,omitempty"`
	OneOf                []*Schema          `json:"oneOf,omitempty"`
}

var (
	rawType    = reflect.TypeOf(json.RawMessage{})
	schemaType = reflect.TypeOf(Schema{})
	hookType   = reflect.TypeOf(datapath.Hook(""))
)

// Patterns of the names and references of the model (cube.CheckName,
// cube.ParseEndpoint).
const (
	namePattern  = `^[A-Za-z][A-Za-z0-9_-]{0,31}$`
	ifacePattern = `^[^/:\s]{1,15}$`
	peerPattern  = `^([A-Za-z][A-Za-z0-9_-]{0,31}:[A-Za-z][A-Za-z0-9_-]{0,31}|[^/:\s]{1,15})$`
	// A unicast MAC: the group bit of the first octet clear.
	macPattern = `^[0-9A-Fa-f][02468ACEace]([:-][0-9A-Fa-f]{2}){5}$`
	// address/prefix-length, IPv4 or IPv6
	prefixPattern = `^(((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])/(3[0-2]|[12]?[0-9])|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))$`
)

func str(pattern string) *Schema { return &Schema{Type: "string", Pattern: pattern} }

func num(v int64) *json.Number {
	n := json.Number(strconv.FormatInt(v, 10))
	return &n
}

// fieldSchemas are the schemas of model fields whose Go type says too little.
var fieldSchemas = map[string]func() *Schema{
	"cube.Cube.Name":      func() *Schema { return str(namePattern) },
	"cube.Cube.Tenant":    func() *Schema { return str(namePattern) },
	"cube.Port.Name":      func() *Schema { return str(namePattern) },
	"cube.Port.Index":     func() *Schema { return &Schema{Type: "integer", Minimum: num(0), Maximum: num(datapath.MaxPorts - 1)} },
	"cube.Port.Peer":      func() *Schema { return str(peerPattern) },
	"cube.Port.MAC":       func() *Schema { return str(macPattern) },
	"cube.Port.Addresses": func() *Schema { return &Schema{Type: "array", Items: str(prefixPattern)} },
	"tenant.Tenant.Name":  func() *Schema { return str(namePattern) },
	"tenant.Tenant.Interfaces": func() *Schema {
		return &Schema{Type: "array", Items: str(ifacePattern)}
	},
	"tenant.Tenant.Quota":           quotaSchema,
	"endpoint.Endpoint.Name":        func() *Schema { return str(namePattern) },
	"endpoint.Endpoint.Tenant":      func() *Schema { return str(namePattern) },
	"endpoint.Endpoint.Slice":       func() *Schema { return str(namePattern) },
	"endpoint.Endpoint.Cube":        func() *Schema { return str(namePattern) },
	"endpoint.Endpoint.Interface":   func() *Schema { return str(ifacePattern) },
	"endpoint.Endpoint.MAC":         func() *Schema { return str(`^[0-9A-Fa-f]{2}([:-][0-9A-Fa-f]{2}){5}$`) },
	"endpoint.Endpoint.Addresses":   func() *Schema { return &Schema{Type: "array", Items: str(prefixPattern), MaxItems: intp(16)} },
	"endpoint.Endpoint.Network":     func() *Schema { return &Schema{Type: "string", MaxLength: intp(256)} },
	"endpoint.Endpoint.ContainerID": func() *Schema { return &Schema{Type: "string", MaxLength: intp(256)} },
	"endpoint.Endpoint.IfName":      func() *Schema { return &Schema{Type: "string", MaxLength: intp(256)} },
	"endpoint.Pod.Namespace":        func() *Schema { return &Schema{Type: "string", MaxLength: intp(253)} },
	"endpoint.Pod.Name":             func() *Schema { return &Schema{Type: "string", MaxLength: intp(253)} },
	"endpoint.Pod.UID":              func() *Schema { return &Schema{Type: "string", MaxLength: intp(253)} },
}

func quotaSchema() *Schema {
	s := &Schema{Type: "object", Properties: map[string]*Schema{}, AdditionalProperties: false,
		Description: "limits that differ from the defaults (bytes for sizes, seconds for times)"}
	for _, q := range tenant.Names {
		s.Properties[q] = &Schema{Type: "integer", Format: "int64", Minimum: num(0)}
	}
	return s
}

// SchemaOf derives the schema of a Go value (pointer or not) from its type
// and json tags. Fields without omitempty are required. Struct tags may
// refine a field: pattern:"^...$", enum:"a|b", minimum:"0", maximum:"9".
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
	switch t {
	case rawType:
		return &Schema{Description: "any JSON value"}
	case schemaType:
		return &Schema{Type: "object", Description: "a JSON Schema"}
	case hookType:
		return &Schema{Type: "string", Enum: []string{string(datapath.XDP), string(datapath.TC)}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := schemaOfType(t.Elem(), depth)
		s.Nullable = true
		return s
	case reflect.Bool:
		return &Schema{Type: "boolean"}
	case reflect.String:
		return &Schema{Type: "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		max := int64(1)<<(t.Bits()-1) - 1
		return &Schema{Type: "integer", Format: "int64", Minimum: num(-max - 1), Maximum: num(max)}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		max := json.Number(strconv.FormatUint(uint64(1)<<(t.Bits()-1)*2-1, 10))
		return &Schema{Type: "integer", Minimum: num(0), Maximum: &max}
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &Schema{Type: "string", Format: "byte", Description: "base64"}
		}
		return &Schema{Type: "array", Items: schemaOfType(t.Elem(), depth+1), Nullable: t.Kind() == reflect.Slice}
	case reflect.Map:
		return &Schema{Type: "object", AdditionalProperties: schemaOfType(t.Elem(), depth+1)}
	case reflect.Interface:
		return &Schema{}
	case reflect.Struct:
		if t.String() == "time.Time" {
			return &Schema{Type: "string", Format: "date-time"}
		}
		s := &Schema{Type: "object", Properties: map[string]*Schema{}, AdditionalProperties: false}
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
			fs := fieldSchema(t, f, depth)
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

// fieldSchema is a struct field's schema: the field table's, or the type's
// refined by the field's tags.
func fieldSchema(owner reflect.Type, f reflect.StructField, depth int) *Schema {
	if mk, ok := fieldSchemas[owner.String()+"."+f.Name]; ok {
		return mk()
	}
	fs := schemaOfType(f.Type, depth+1)
	if p := f.Tag.Get("pattern"); p != "" {
		fs.Pattern = p
	}
	if e := f.Tag.Get("enum"); e != "" {
		fs.Enum = strings.Split(e, "|")
	}
	for tag, dst := range map[string]**json.Number{"minimum": &fs.Minimum, "maximum": &fs.Maximum} {
		if v := f.Tag.Get(tag); v != "" {
			n := json.Number(v)
			*dst = &n
		}
	}
	return fs
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

// optionalBody is a body that may be left out (an empty body is {}).
func optionalBody(s *Schema) *body {
	b := jsonBody(s)
	b.Required = false
	return b
}

// ok documents a success with code (204: no content) and every error.
func ok(code int, desc string, s *Schema) map[string]response {
	r := response{Description: desc}
	if s != nil && code != 204 {
		r.Content = map[string]mediaType{"application/json": {s}}
	}
	return map[string]response{
		fmt.Sprint(code): r,
		"default":        {Description: "error", Content: map[string]mediaType{"application/json": {errorSchema}}},
	}
}

var errorSchema = SchemaOf(struct {
	Error httpError `json:"error"`
}{})

// pathParam is a path parameter; names of cubes, ports and tenants have
// their pattern.
func pathParam(name string) param {
	s := &Schema{Type: "string"}
	switch name {
	case "cube", "port", "tenant", "endpoint":
		s.Pattern = namePattern
	case "iface":
		s.Pattern = ifacePattern
	case "type":
		for _, t := range cube.Types() {
			s.Enum = append(s.Enum, t.Name)
		}
	}
	return param{Name: name, In: "path", Required: true, Schema: s}
}

func pathParams(names ...string) []param {
	out := make([]param, 0, len(names))
	for _, n := range names {
		out = append(out, pathParam(n))
	}
	return out
}

func object(props map[string]*Schema, required ...string) *Schema {
	return &Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: false}
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
	portSchema := SchemaOf(&cube.Port{})
	createCube := SchemaOf(&cubeRequest{})
	var types []string
	for _, t := range cube.Types() {
		types = append(types, t.Name)
	}
	createCube.Properties["type"] = &Schema{Type: "string", Enum: types}
	createCube.Properties["hook"] = &Schema{Type: "string", Enum: []string{string(datapath.XDP), string(datapath.TC)}}
	tenantSchema := SchemaOf(&tenant.Tenant{})
	tenantStatus := SchemaOf(&engine.TenantStatus{})
	patchPort := object(map[string]*Schema{
		"peer":      {Type: "string", Pattern: `^$|` + peerPattern[1:], Description: `"" unpeers`},
		"mac":       portSchema.Properties["mac"],
		"addresses": portSchema.Properties["addresses"],
		"config":    {Description: "any JSON value"},
	})
	add("/v1/health", "get", op{Summary: "Liveness", Responses: ok(200, "ok", object(map[string]*Schema{"status": {Type: "string"}}, "status"))})
	add("/v1/openapi.json", "get", op{Summary: "This document", Responses: ok(200, "the OpenAPI document", &Schema{Type: "object"})})
	add("/v1/types", "get", op{Summary: "List NF types and their models", Responses: ok(200, "types", &Schema{Type: "array", Items: SchemaOf(&TypeInfo{})})})
	add("/v1/types/{type}", "get", op{Summary: "One NF type's model", Parameters: pathParams("type"), Responses: ok(200, "type", SchemaOf(&TypeInfo{}))})
	add("/v1/topology", "get", op{Summary: "The whole desired state, as a topology document (administrator)", Responses: ok(200, "topology", SchemaOf(&cube.Document{}))})
	add("/v1/topology", "put", op{Summary: "Make a topology document the whole desired state (declarative apply; administrator); ?dry_run=true only reports the changes",
		Parameters:  []param{{Name: "dry_run", In: "query", Schema: &Schema{Type: "boolean"}}},
		RequestBody: jsonBody(SchemaOf(&cube.Document{})),
		Responses: ok(200, "changes", object(map[string]*Schema{
			"dry_run": {Type: "boolean"}, "changes": {Type: "array", Items: SchemaOf(&engine.Change{})}}, "dry_run", "changes"))})
	add("/v1/cubes", "get", op{Summary: "List cubes", Responses: ok(200, "cubes", &Schema{Type: "array", Items: cubeSchema})})
	add("/v1/cubes", "post", op{Summary: "Create a cube", RequestBody: jsonBody(createCube), Responses: ok(201, "the cube", cubeSchema)})
	add("/v1/cubes/{cube}", "get", op{Summary: "Get a cube", Parameters: pathParams("cube"), Responses: ok(200, "the cube", cubeSchema)})
	add("/v1/cubes/{cube}", "patch", op{Summary: "Change a cube's tenant (administrator) or settings", Parameters: pathParams("cube"),
		RequestBody: jsonBody(object(map[string]*Schema{"tenant": str(namePattern), "config": {Description: "any JSON value"}})),
		Responses:   ok(200, "the cube", cubeSchema)})
	add("/v1/cubes/{cube}", "delete", op{Summary: "Delete a cube", Parameters: pathParams("cube"), Responses: ok(204, "deleted", nil)})
	add("/v1/cubes/{cube}/ports", "get", op{Summary: "List a cube's ports", Parameters: pathParams("cube"), Responses: ok(200, "ports", &Schema{Type: "array", Items: portSchema})})
	add("/v1/cubes/{cube}/ports", "post", op{Summary: "Add a port", Parameters: pathParams("cube"), RequestBody: jsonBody(SchemaOf(&portRequest{})), Responses: ok(201, "the port", portSchema)})
	add("/v1/cubes/{cube}/ports/{port}", "get", op{Summary: "Get a port", Parameters: pathParams("cube", "port"), Responses: ok(200, "the port", portSchema)})
	add("/v1/cubes/{cube}/ports/{port}", "patch", op{Summary: "Change a port's peer, MAC, addresses or settings", Parameters: pathParams("cube", "port"),
		RequestBody: jsonBody(patchPort), Responses: ok(200, "the port", portSchema)})
	add("/v1/cubes/{cube}/ports/{port}", "delete", op{Summary: "Delete a port", Parameters: pathParams("cube", "port"), Responses: ok(204, "deleted", nil)})
	add("/v1/cubes/{cube}/ports/{port}/inject", "post", op{Summary: "Send a frame into the port (direction in) or out of it to its peer (out)", Parameters: pathParams("cube", "port"),
		RequestBody: jsonBody(object(map[string]*Schema{
			"frame":     {Type: "string", Pattern: `^([0-9A-Fa-f]{2} ?){14,}$`, Description: "the frame in hex, Ethernet header first"},
			"direction": {Type: "string", Enum: []string{"in", "out"}}}, "frame")),
		Responses: ok(202, "injected", object(map[string]*Schema{"injected_bytes": {Type: "integer"}}, "injected_bytes"))})
	add("/v1/cubes/{cube}/stats", "get", op{Summary: "Per-port packet, byte and drop counters", Parameters: pathParams("cube"), Responses: ok(200, "counters", SchemaOf(&engine.CubeStats{}))})
	add("/v1/cubes/{cube}/stats", "delete", op{Summary: "Zero a cube's counters", Parameters: pathParams("cube"), Responses: ok(204, "zeroed", nil)})
	add("/v1/cubes/{cube}/swap", "post", op{Summary: "Hot-swap the cube's program, keeping its maps: its NF type's (no object), or an eBPF object (administrator)", Parameters: pathParams("cube"),
		RequestBody: optionalBody(object(map[string]*Schema{"object": {Type: "string", Format: "byte", Description: "an eBPF ELF object, base64"}})),
		Responses:   ok(200, "swapped", object(map[string]*Schema{"swapped": {Type: "string"}}, "swapped"))})
	add("/v1/attachments", "get", op{Summary: "List attachments", Responses: ok(200, "attachments", &Schema{Type: "array", Items: SchemaOf(&Attachment{})})})
	add("/v1/attachments", "post", op{Summary: "Attach a transparent cube to a cube port or interface", RequestBody: jsonBody(attachSchema()), Responses: ok(201, "attached", attachSchema())})
	add("/v1/attachments/{cube}", "delete", op{Summary: "Detach a transparent cube", Parameters: pathParams("cube"), Responses: ok(204, "detached", nil)})
	add("/v1/interfaces/{iface}/stats", "get", op{Summary: "Frames edgenf took in on an interface (administrator)", Parameters: pathParams("iface"),
		Responses: ok(200, "counters by hook and direction", &Schema{Type: "object", AdditionalProperties: SchemaOf(&datapath.Stats{})})})
	add("/v1/tenants", "get", op{Summary: "Tenants, their interfaces and usage against their quotas (a tenant sees itself)", Responses: ok(200, "tenants", &Schema{Type: "array", Items: tenantStatus})})
	add("/v1/tenants/{tenant}", "get", op{Summary: "A tenant, its interfaces and usage against its quotas", Parameters: pathParams("tenant"), Responses: ok(200, "tenant", tenantStatus)})
	add("/v1/tenants/{tenant}", "put", op{Summary: "Declare a tenant or replace its record (administrator): interfaces it may use, quotas", Parameters: pathParams("tenant"),
		RequestBody: jsonBody(tenantSchema), Responses: ok(200, "tenant (201 when new)", tenantStatus)})
	add("/v1/tenants/{tenant}", "delete", op{Summary: "Remove a tenant's record (administrator): defaults apply again", Parameters: pathParams("tenant"), Responses: ok(204, "removed", nil)})
	endpointSchema := SchemaOf(&endpoint.Endpoint{})
	add("/v1/endpoints", "get", op{Summary: "Workloads (pods) plugged into tenants' cubes by the CNI plugin (a tenant sees its own)", Responses: ok(200, "endpoints", &Schema{Type: "array", Items: endpointSchema})})
	add("/v1/endpoints/{endpoint}", "get", op{Summary: "One endpoint", Parameters: pathParams("endpoint"), Responses: ok(200, "endpoint", endpointSchema)})
	add("/v1/endpoints/{endpoint}", "put", op{Summary: "Plug a workload in (administrator): a port of the tenant's cube peered with the interface, and the interface given to the tenant, in one change",
		Parameters: pathParams("endpoint"), RequestBody: jsonBody(endpointSchema), Responses: ok(200, "endpoint (201 when new)", endpointSchema)})
	add("/v1/endpoints/{endpoint}", "delete", op{Summary: "Unplug a workload (administrator): its port and its interface, in one change", Parameters: pathParams("endpoint"), Responses: ok(204, "removed", nil)})
	add("/v1/whoami", "get", op{Summary: "Who the request authenticated as: the administrator or a tenant", Responses: ok(200, "identity", SchemaOf(&Identity{}))})
	add("/v1/graph", "get", op{Summary: "The topology the caller may see, without table entries or settings (the dashboard's graph)", Responses: ok(200, "graph", SchemaOf(&Graph{}))})
	add("/v1/stats", "get", op{Summary: "Every visible cube's per-port counters, read at one time", Responses: ok(200, "counters", SchemaOf(&Stats{}))})
	for _, t := range cube.Types() {
		typedPaths(add, t)
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

func attachSchema() *Schema {
	return object(map[string]*Schema{
		"cube":     str(namePattern),
		"point":    str(peerPattern),
		"position": {Type: "string", Pattern: `^(first|last|(before|after):[A-Za-z][A-Za-z0-9_-]{0,31})$`},
	}, "cube", "point")
}

// typedPaths documents one NF type's settings, tables, views and actions.
func typedPaths(add func(string, string, op), t *cube.Type) {
	base := "/v1/nf/" + t.Name + "/{cube}"
	cp := pathParams("cube")
	if t.Config != nil {
		add(base+"/config", "get", op{Summary: t.Name + " settings", Parameters: cp, Responses: ok(200, "settings", SchemaOf(t.Config))})
		add(base+"/config", "put", op{Summary: "Replace " + t.Name + " settings", Parameters: cp, RequestBody: jsonBody(SchemaOf(t.Config)), Responses: ok(200, "settings", SchemaOf(t.Config))})
	}
	for _, tb := range t.Tables {
		item := SchemaOf(tb.Item)
		p := base + "/tables/" + tb.Name
		keyed := pathParams("cube", "key")
		add(p, "get", op{Summary: "List " + t.Name + " " + tb.Name + ": " + tb.Doc, Parameters: cp, Responses: ok(200, "entries", &Schema{Type: "array", Items: item})})
		add(p, "post", op{Summary: "Add one entry or an array of entries (all or none)", Parameters: cp,
			RequestBody: jsonBody(&Schema{OneOf: []*Schema{item, {Type: "array", Items: item, MinItems: intp(1)}}}),
			Responses:   ok(201, "added", &Schema{OneOf: []*Schema{item, {Type: "array", Items: item}}})})
		add(p, "put", op{Summary: "Replace the whole table atomically", Parameters: cp, RequestBody: jsonBody(&Schema{Type: "array", Items: item}),
			Responses: ok(200, "replaced", object(map[string]*Schema{"entries": {Type: "integer"}}, "entries"))})
		add(p+"/{key}", "get", op{Summary: "Get one entry", Parameters: keyed, Responses: ok(200, "entry", item)})
		add(p+"/{key}", "put", op{Summary: "Add or replace one entry", Parameters: keyed, RequestBody: jsonBody(item), Responses: ok(200, "entry", item)})
		add(p+"/{key}", "delete", op{Summary: "Delete one entry", Parameters: keyed, Responses: ok(204, "deleted", nil)})
	}
	for _, v := range t.Views {
		var sc *Schema
		switch {
		case v.Item == nil:
			sc = &Schema{}
		case v.Object:
			sc = SchemaOf(v.Item)
		default:
			sc = &Schema{Type: "array", Items: SchemaOf(v.Item)}
		}
		add(base+"/views/"+v.Name, "get", op{Summary: v.Doc, Parameters: cp, Responses: ok(200, v.Name, sc)})
	}
	for _, a := range t.Actions {
		o := op{Summary: a.Doc, Parameters: cp, Responses: ok(200, "result", &Schema{})}
		if a.Args != nil {
			o.RequestBody = jsonBody(SchemaOf(a.Args))
		}
		add(base+"/actions/"+a.Name, "post", o)
	}
}

func intp(n int) *int { return &n }
