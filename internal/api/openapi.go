package api

import (
	"fmt"
	"reflect"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/schema"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Schema is a JSON Schema, as the OpenAPI document and /v1/types give it.
type Schema = schema.Schema

// SchemaOf derives the schema of a model type (internal/schema).
func SchemaOf(v any) *Schema { return schema.Of(v) }

func init() {
	schema.Special[reflect.TypeOf(Schema{})] = func() *Schema { return &Schema{Type: "object", Description: "a JSON Schema"} }
	schema.Special[reflect.TypeOf(tenant.Quota{})] = quotaSchema
}

func quotaSchema() *Schema {
	s := &Schema{Type: "object", Properties: map[string]*Schema{}, AdditionalProperties: false,
		Description: "limits that differ from the defaults (bytes for sizes, seconds for times)"}
	for _, q := range tenant.Names {
		s.Properties[q] = &Schema{Type: "integer", Format: "int64", Minimum: schema.Num(0), Maximum: schema.Num(1<<63 - 1)}
	}
	return s
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
		s = schema.String("name")
	case "iface":
		s = schema.String("ifname")
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

var object = schema.Object

// setConfig puts the schema of the settings of NF type t into the schema
// s of a cube: required when some settings are (a p4 cube's source).
func setConfig(s *Schema, t *cube.Type) {
	if t.Config == nil {
		s.Properties["config"] = &Schema{Type: "object", MaxProperties: schema.Int(0), Nullable: true, Description: t.Name + " has no settings"}
		return
	}
	c := SchemaOf(t.Config)
	if len(c.Required) > 0 {
		s.Required = append(s.Required, "config")
	} else {
		c.Nullable = true
	}
	s.Properties["config"] = c
}

// portConfigSchema is the schema of the settings of a port of NF type t.
func portConfigSchema(t *cube.Type) *Schema {
	if t.PortConfig == nil {
		return &Schema{Type: "object", MaxProperties: schema.Int(0), Nullable: true, Description: t.Name + " ports have no settings"}
	}
	s := SchemaOf(t.PortConfig)
	s.Nullable = true
	return s
}

// typed narrows the schema of a port (or a port request) to NF type t: its
// port settings and addresses.
func typedPort(s *Schema, t *cube.Type) *Schema {
	s.Properties["config"] = portConfigSchema(t)
	if t.PortAddresses != "" {
		s.Properties["addresses"] = &Schema{Type: "array", Items: schema.String(t.PortAddresses), Nullable: true}
	}
	if name, ok := s.Properties["name"]; ok && len(t.PortNames) > 0 {
		name.Pattern, name.Description, name.Enum = "", "", t.PortNames
	}
	if index, ok := s.Properties["index"]; ok && t.PortIndexMax > 0 {
		index.Maximum = schema.Num(int64(t.PortIndexMax))
	}
	return s
}

// patchPortSchema is the body that changes a port.
func patchPortSchema() *Schema {
	return object(map[string]*Schema{
		"peer":      {Type: "string", Pattern: `^$|` + schema.Formats["peer"].Pattern[1:], Description: `another cube's port ("cube:port") or a Linux interface; "" unpeers`},
		"mac":       schema.String("mac-unicast"),
		"addresses": {Type: "array", Items: schema.String("port-address"), Nullable: true},
		"config":    {Description: "any JSON value: the port settings of the cube's NF type (they do not fit: 409; /v1/nf/{type}/{cube}/ports/{port} describes them)"},
	})
}

// cubeRequestSchema is the body that creates a cube of NF type t.
func cubeRequestSchema(t *cube.Type) *Schema {
	return typedCube(SchemaOf(&cubeRequest{}), t)
}

// typedCube narrows the schema of a cube to NF type t: its name, hooks,
// settings and ports (none for a transparent type).
func typedCube(s *Schema, t *cube.Type) *Schema {
	s.Properties["type"] = &Schema{Type: "string", Enum: []string{t.Name}}
	var hooks []string
	for _, h := range t.Hooks {
		hooks = append(hooks, string(h))
	}
	s.Properties["hook"] = &Schema{Type: "string", Enum: hooks}
	setConfig(s, t)
	if t.Transparent {
		delete(s.Properties, "ports")
	} else {
		s.Properties["ports"].Items = typedPort(s.Properties["ports"].Items, t)
	}
	return s
}

// docCubeSchema is a cube of NF type t in a topology document.
func docCubeSchema(t *cube.Type) *Schema {
	s := typedCube(SchemaOf(&cube.DocCube{}), t)
	tables := object(map[string]*Schema{})
	for _, tb := range t.Tables {
		tables.Properties[tb.Name] = tableSchema(tb)
	}
	tables.Nullable = true
	s.Properties["tables"] = tables
	return s
}

// tableSchema is a whole table: a list of entries.
func tableSchema(tb cube.Table) *Schema {
	s := &Schema{Type: "array", Items: SchemaOf(tb.Item)}
	if tb.Max > 0 {
		s.MaxItems = schema.Int(tb.Max)
	}
	return s
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
	createCube := &Schema{Description: "a cube of one of the NF types, with that type's settings and port settings"}
	document := SchemaOf(&cube.Document{})
	docCubes := &Schema{}
	for _, t := range cube.Types() {
		createCube.OneOf = append(createCube.OneOf, cubeRequestSchema(t))
		docCubes.OneOf = append(docCubes.OneOf, docCubeSchema(t))
	}
	document.Properties["cubes"].Items = docCubes
	tenantSchema := SchemaOf(&tenant.Tenant{})
	tenantStatus := SchemaOf(&engine.TenantStatus{})
	patchPort := patchPortSchema()
	add("/v1/health", "get", op{Summary: "Liveness", Responses: ok(200, "ok", object(map[string]*Schema{"status": {Type: "string"}}, "status"))})
	add("/v1/openapi.json", "get", op{Summary: "This document", Responses: ok(200, "the OpenAPI document", &Schema{Type: "object"})})
	add("/v1/types", "get", op{Summary: "List NF types and their models", Responses: ok(200, "types", &Schema{Type: "array", Items: SchemaOf(&TypeInfo{})})})
	add("/v1/types/{type}", "get", op{Summary: "One NF type's model", Parameters: pathParams("type"), Responses: ok(200, "type", SchemaOf(&TypeInfo{}))})
	add("/v1/topology", "get", op{Summary: "The whole desired state, as a topology document (administrator)", Responses: ok(200, "topology", document)})
	add("/v1/topology", "put", op{Summary: "Make a topology document the whole desired state (declarative apply; administrator); ?dry_run=true only reports the changes",
		Parameters:  []param{{Name: "dry_run", In: "query", Schema: &Schema{Type: "boolean"}}},
		RequestBody: jsonBody(document),
		Responses: ok(200, "changes (and, for a dry run, the cost estimate of each chain)", object(map[string]*Schema{
			"dry_run": {Type: "boolean"}, "changes": {Type: "array", Items: SchemaOf(&engine.Change{})},
			"estimate": {Type: "array", Items: SchemaOf(&estimate.ChainCost{})}, "estimate_error": {Type: "string"}}, "dry_run", "changes"))})
	add("/v1/cubes", "get", op{Summary: "List cubes", Responses: ok(200, "cubes", &Schema{Type: "array", Items: cubeSchema})})
	add("/v1/cubes", "post", op{Summary: "Create a cube", RequestBody: jsonBody(createCube), Responses: ok(201, "the cube", cubeSchema)})
	add("/v1/cubes/{cube}", "get", op{Summary: "Get a cube", Parameters: pathParams("cube"), Responses: ok(200, "the cube", cubeSchema)})
	add("/v1/cubes/{cube}", "patch", op{Summary: "Change a cube's tenant (administrator) or settings", Parameters: pathParams("cube"),
		RequestBody: jsonBody(object(map[string]*Schema{"tenant": schema.String("name"),
			"config": {Description: "any JSON value: the settings of the cube's NF type (/v1/nf/{type}/{cube}/config)"}})),
		Responses: ok(200, "the cube", cubeSchema)})
	add("/v1/cubes/{cube}", "delete", op{Summary: "Delete a cube", Parameters: pathParams("cube"), Responses: ok(204, "deleted", nil)})
	add("/v1/cubes/{cube}/ports", "get", op{Summary: "List a cube's ports", Parameters: pathParams("cube"), Responses: ok(200, "ports", &Schema{Type: "array", Items: portSchema})})
	add("/v1/cubes/{cube}/ports", "post", op{Summary: "Add a port", Parameters: pathParams("cube"), RequestBody: jsonBody(SchemaOf(&portRequest{})), Responses: ok(201, "the port", portSchema)})
	add("/v1/cubes/{cube}/ports/{port}", "get", op{Summary: "Get a port", Parameters: pathParams("cube", "port"), Responses: ok(200, "the port", portSchema)})
	add("/v1/cubes/{cube}/ports/{port}", "patch", op{Summary: "Change a port's peer, MAC, addresses or settings", Parameters: pathParams("cube", "port"),
		RequestBody: jsonBody(patchPort), Responses: ok(200, "the port", portSchema)})
	add("/v1/cubes/{cube}/ports/{port}", "delete", op{Summary: "Delete a port", Parameters: pathParams("cube", "port"), Responses: ok(204, "deleted", nil)})
	add("/v1/cubes/{cube}/ports/{port}/inject", "post", op{Summary: "Send a frame into the port (direction in) or out of it to its peer (out)", Parameters: pathParams("cube", "port"),
		RequestBody: jsonBody(object(map[string]*Schema{
			"frame": {Type: "string", Pattern: `^([0-9A-Fa-f]{2} ?){14,}$`,
				Description: "the frame in hex, Ethernet header first; at most what the port carries (its peer's MTU, the Ethernet header and VLAN tags: 409 otherwise)"},
			"direction": {Type: "string", Enum: []string{"in", "out"}}}, "frame")),
		Responses: ok(202, "injected", object(map[string]*Schema{"injected_bytes": {Type: "integer"}}, "injected_bytes"))})
	add("/v1/cubes/{cube}/stats", "get", op{Summary: "Per-port packet, byte and drop counters", Parameters: pathParams("cube"), Responses: ok(200, "counters", SchemaOf(&engine.CubeStats{}))})
	add("/v1/cubes/{cube}/stats", "delete", op{Summary: "Zero a cube's counters", Parameters: pathParams("cube"), Responses: ok(204, "zeroed", nil)})
	add("/v1/cubes/{cube}/swap", "post", op{Summary: "Hot-swap the cube's program, keeping its maps: its NF type's (no object), or an eBPF object (administrator)", Parameters: pathParams("cube"),
		RequestBody: optionalBody(object(map[string]*Schema{"object": {Type: "string", Format: "byte", Description: "an eBPF ELF object, base64"}})),
		Responses:   ok(200, "swapped", object(map[string]*Schema{"swapped": {Type: "string"}}, "swapped"))})
	add("/v1/attachments", "get", op{Summary: "List attachments", Responses: ok(200, "attachments", &Schema{Type: "array", Items: SchemaOf(&Attachment{})})})
	attach := SchemaOf(&Attachment{})
	attach.Properties["position"].Pattern = `^(first|last|(before|after):` + schema.Name + `)$`
	add("/v1/attachments", "post", op{Summary: "Attach a transparent cube to a cube port or interface", RequestBody: jsonBody(attach), Responses: ok(201, "attached", attach)})
	captured := ok(200, "the capture as pcapng, streamed as frames come (capture.go)", nil)
	captured["200"] = response{Description: captured["200"].Description,
		Content: map[string]mediaType{"application/x-pcapng": {&Schema{Type: "string", Format: "binary"}}}}
	add("/v1/captures", "post", op{Summary: "Capture packets at a cube port or interface until count frames, the duration, or the client hangs up",
		RequestBody: jsonBody(SchemaOf(&CaptureRequest{})), Responses: captured})
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
			"title":   "edgenf API",
			"version": "1",
			"description": "Network functions in the Linux kernel (eBPF), chained into service chains. Errors: {\"error\": {code, field, message}}: " +
				"400 the request is not what this document describes; 401 no or a wrong token; 403 not the sender's to do, or over a quota; " +
				"404 it names something that does not exist (or is another tenant's); 409 it clashes with the present state " +
				"(an entry that exists, a port a rule needs, a subnet of another port); 413 a body over the size limit; " +
				"422 it breaks a rule the document states in words but cannot check (an inverted range, host bits set in a prefix, " +
				"a P4 program that does not compile); 429 too many requests at once.",
		},
		"paths": paths,
	}
}

// typedPaths documents one NF type's settings, tables, views and actions.
func typedPaths(add func(string, string, op), t *cube.Type) {
	base := "/v1/nf/" + t.Name + "/{cube}"
	cp := pathParams("cube")
	if t.Config != nil {
		add(base+"/config", "get", op{Summary: t.Name + " settings", Parameters: cp, Responses: ok(200, "settings", SchemaOf(t.Config))})
		add(base+"/config", "put", op{Summary: "Replace " + t.Name + " settings", Parameters: cp, RequestBody: jsonBody(SchemaOf(t.Config)), Responses: ok(200, "settings", SchemaOf(t.Config))})
	}
	if !t.Transparent {
		port := typedPort(SchemaOf(&cube.Port{}), t)
		add(base+"/ports", "post", op{Summary: "Add a port to a " + t.Name + " cube", Parameters: cp,
			RequestBody: jsonBody(typedPort(SchemaOf(&portRequest{}), t)), Responses: ok(201, "the port", port)})
		add(base+"/ports/{port}", "patch", op{Summary: "Change a port of a " + t.Name + " cube: peer, MAC, addresses or settings", Parameters: pathParams("cube", "port"),
			RequestBody: jsonBody(typedPort(patchPortSchema(), t)), Responses: ok(200, "the port", port)})
	}
	for _, tb := range t.Tables {
		item := SchemaOf(tb.Item)
		p := base + "/tables/" + tb.Name
		keyed := pathParams("cube", "key")
		add(p, "get", op{Summary: "List " + t.Name + " " + tb.Name + ": " + tb.Doc, Parameters: cp, Responses: ok(200, "entries", &Schema{Type: "array", Items: item})})
		add(p, "post", op{Summary: "Add one entry or an array of entries (all or none)", Parameters: cp,
			RequestBody: jsonBody(&Schema{OneOf: []*Schema{item, {Type: "array", Items: item, MinItems: schema.Int(1), MaxItems: tableSchema(tb).MaxItems}}}),
			Responses:   ok(201, "added", &Schema{OneOf: []*Schema{item, {Type: "array", Items: item}}})})
		add(p, "put", op{Summary: "Replace the whole table atomically", Parameters: cp, RequestBody: jsonBody(tableSchema(tb)),
			Responses: ok(200, "replaced", object(map[string]*Schema{"entries": {Type: "integer"}}, "entries"))})
		add(p+"/{key}", "get", op{Summary: "Get one entry", Parameters: keyed, Responses: ok(200, "entry", item)})
		add(p+"/{key}", "put", op{Summary: "Add or replace one entry (its key must be the URL's: 409 otherwise)", Parameters: keyed, RequestBody: jsonBody(item), Responses: ok(200, "entry", item)})
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
		} else {
			o.RequestBody = optionalBody(&Schema{Type: "object", MaxProperties: schema.Int(0), Description: "no arguments"})
		}
		add(base+"/actions/"+a.Name, "post", o)
	}
}
