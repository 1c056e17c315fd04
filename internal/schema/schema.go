// Package schema derives the JSON Schemas of the API's OpenAPI document
// (the subset OpenAPI 3.0 uses) from the Go types of edgenf's model: the
// types and their validation stay the one description of what a request may
// hold. Struct tags refine a field's type:
//
//	format:"mac-unicast"  one of Formats: its pattern and what it means
//	pattern:"^...$"       enum:"a|b"  minimum:"1"  maximum:"9"
//	minLength:"1"  maxLength:"256"  minItems:"1"  maxItems:"32"  doc:"a description"
//
// A type whose fields depend on each other in ways tags cannot say (ports
// need protocol tcp or udp) implements Refiner. Fields without omitempty
// are required.
//
// The document promises that what it calls valid is accepted, up to the
// state of the target (a port that must exist: 404, an entry that clashes
// with another: 409) and the rules a schema cannot state, which the
// descriptions state and the API answers with 422 (a range whose bounds
// are inverted, a prefix with host bits set, a P4 program that does not
// compile). internal/nf/all's tests hold every NF type to it.
package schema

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// Schema is a JSON Schema object, as OpenAPI 3.0 writes it. The API decodes
// bodies strictly, so objects allow no other properties.
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
	MinItems             *int               `json:"minItems,omitempty"`
	MaxItems             *int               `json:"maxItems,omitempty"`
	MaxProperties        *int               `json:"maxProperties,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`
	Enum                 []string           `json:"enum,omitempty"`
	Nullable             bool               `json:"nullable,omitempty"`
	OneOf                []*Schema          `json:"oneOf,omitempty"`
	AnyOf                []*Schema          `json:"anyOf,omitempty"`
	Not                  *Schema            `json:"not,omitempty"`
}

// Refiner is implemented by model types whose schema says more than their
// fields' tags: RefineSchema adjusts the schema derived from the fields.
type Refiner interface {
	RefineSchema(s *Schema)
}

// Raw marks a field whose value is any JSON (json.RawMessage).
var rawType = reflect.TypeOf(json.RawMessage{})

// Of derives the schema of a Go value (pointer or not) from its type and
// tags.
func Of(v any) *Schema {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return OfType(t)
}

// OfType is Of for a reflect.Type.
func OfType(t reflect.Type) *Schema { return ofType(t, 0) }

// Special gives the schema of Go types whose kind says too little (the
// daemon's own string types with fixed values); they register here.
var Special = map[reflect.Type]func() *Schema{}

func ofType(t reflect.Type, depth int) *Schema {
	if depth > 8 {
		return &Schema{}
	}
	if t == rawType {
		return &Schema{Description: "any JSON value"}
	}
	if mk, ok := Special[t]; ok {
		return mk()
	}
	var s *Schema
	switch t.Kind() {
	case reflect.Pointer:
		s = ofType(t.Elem(), depth)
		s.Nullable = true
		return s
	case reflect.Bool:
		s = &Schema{Type: "boolean"}
	case reflect.String:
		s = &Schema{Type: "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		max := int64(1)<<(t.Bits()-1) - 1
		s = &Schema{Type: "integer", Format: "int64", Minimum: Num(-max - 1), Maximum: Num(max)}
		if t.Bits() <= 32 {
			s.Format = "int32"
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		max := json.Number(strconv.FormatUint(uint64(1)<<(t.Bits()-1)*2-1, 10))
		s = &Schema{Type: "integer", Minimum: Num(0), Maximum: &max}
	case reflect.Float32, reflect.Float64:
		s = &Schema{Type: "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &Schema{Type: "string", Format: "byte", Description: "base64"}
		}
		s = &Schema{Type: "array", Items: ofType(t.Elem(), depth+1), Nullable: t.Kind() == reflect.Slice}
	case reflect.Map:
		s = &Schema{Type: "object", AdditionalProperties: ofType(t.Elem(), depth+1)}
	case reflect.Interface:
		return &Schema{}
	case reflect.Struct:
		if t.String() == "time.Time" {
			return &Schema{Type: "string", Format: "date-time"}
		}
		s = structSchema(t, depth)
	default:
		return &Schema{}
	}
	if r, ok := reflect.New(t).Interface().(Refiner); ok {
		r.RefineSchema(s)
	}
	return s
}

func structSchema(t reflect.Type, depth int) *Schema {
	s := &Schema{Type: "object", Properties: map[string]*Schema{}, AdditionalProperties: false}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			inner := ofType(f.Type, depth+1)
			for k, v := range inner.Properties {
				s.Properties[k] = v
			}
			s.Required = append(s.Required, inner.Required...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.Properties[name] = fieldSchema(f, depth)
		if !strings.Contains(opts, "omitempty") {
			s.Required = append(s.Required, name)
		}
	}
	return s
}

// fieldSchema is a struct field's schema: its type's, refined by its tags.
// Tags on a slice or map field apply to its elements, except minItems and
// maxItems.
func fieldSchema(f reflect.StructField, depth int) *Schema {
	fs := ofType(f.Type, depth+1)
	el := fs
	switch {
	case fs.Type == "array" && fs.Items != nil:
		el = fs.Items
	case fs.Type == "object" && f.Type.Kind() == reflect.Map:
		if e, ok := fs.AdditionalProperties.(*Schema); ok {
			el = e
		}
	}
	if name := f.Tag.Get("format"); name != "" {
		fm, ok := Formats[name]
		if !ok {
			panic("schema: " + f.Name + ": unknown format " + name)
		}
		el.Pattern, el.Format = fm.Pattern, fm.OpenAPI
		el.Description = fm.Doc
	}
	if p := f.Tag.Get("pattern"); p != "" {
		el.Pattern = p
	}
	if e := f.Tag.Get("enum"); e != "" {
		el.Enum = strings.Split(e, "|")
	}
	for tag, dst := range map[string]**json.Number{"minimum": &el.Minimum, "maximum": &el.Maximum} {
		if v := f.Tag.Get(tag); v != "" {
			n := json.Number(v)
			*dst = &n
		}
	}
	for tag, dst := range map[string]**int{"minLength": &el.MinLength, "maxLength": &el.MaxLength, "minItems": &fs.MinItems, "maxItems": &fs.MaxItems} {
		if v := f.Tag.Get(tag); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				panic("schema: " + f.Name + ": " + tag + " " + v)
			}
			*dst = &n
		}
	}
	if fs.MinItems != nil && *fs.MinItems > 0 {
		fs.Nullable = false // null decodes as no items
	}
	if d := f.Tag.Get("doc"); d != "" {
		if el != fs || fs.Description == "" {
			fs.Description = d
		} else {
			fs.Description = d + " (" + fs.Description + ")"
		}
	}
	return fs
}

// Num is a JSON number for Minimum and Maximum.
func Num(v int64) *json.Number {
	n := json.Number(strconv.FormatInt(v, 10))
	return &n
}

// Int is a pointer for the length and count limits.
func Int(n int) *int { return &n }

// Str is a string of a pattern.
func Str(pattern string) *Schema { return &Schema{Type: "string", Pattern: pattern} }

// String is a string of one of Formats.
func String(format string) *Schema {
	fm, ok := Formats[format]
	if !ok {
		panic("schema: unknown format " + format)
	}
	return &Schema{Type: "string", Pattern: fm.Pattern, Format: fm.OpenAPI, Description: fm.Doc}
}

// Object is an object of these properties and no others.
func Object(props map[string]*Schema, required ...string) *Schema {
	return &Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: false}
}

// Absent is the schema of a property that must not be given (in a branch
// of AnyOf).
func Absent() *Schema { return &Schema{Not: &Schema{}} }

// Branch is one alternative of AnyOf: what it requires, and the schemas
// it narrows properties to (Absent: the property is not given).
func Branch(required []string, props map[string]*Schema) *Schema {
	return &Schema{Required: required, Properties: props}
}
