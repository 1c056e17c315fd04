package cube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
)

// Decode reads raw JSON into a new value of the type zero points to,
// rejecting unknown fields and type mismatches with errors that name the
// field. field prefixes the names ("config", "tables.rules[p0]").
func Decode(field string, raw json.RawMessage, zero any) (any, error) {
	v := reflect.New(reflect.TypeOf(zero).Elem()).Interface()
	if err := DecodeInto(field, raw, v); err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeInto is Decode into an existing pointer. Empty input leaves v as is.
func DecodeInto(field string, raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(field, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Errorf(field, "unexpected data after the JSON value")
	}
	return nil
}

// jsonError turns encoding/json errors into FieldErrors naming the field.
func jsonError(field string, err error) error {
	join := func(f string) string {
		if field == "" {
			return f
		}
		if f == "" {
			return field
		}
		return field + "." + f
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return Errorf(join(te.Field), "expected %s, got JSON %s", kindName(te.Type), te.Value)
	case errors.As(err, &se):
		return Errorf(field, "malformed JSON at byte %d: %v", se.Offset, se)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return Errorf(join(name), "unknown field")
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return Errorf(field, "truncated JSON")
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return Within(field, err)
	}
	return Errorf(field, "%v", err)
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return fmt.Sprint(t)
}

// DecodeConfig decodes and validates the cube's settings.
func (t *Type) DecodeConfig(c *Cube) (any, error) { return t.decodeConfig(c, nil) }

// ConfigOf is DecodeConfig typed for an NF whose settings are a *T: the
// zero settings when the cube has none.
func ConfigOf[T any](t *Type, c *Cube) (*T, error) {
	v, err := t.DecodeConfig(c)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return new(T), nil
	}
	return v.(*T), nil
}

// Keeper is a settings type that fills in some of its fields itself when
// they are left out (a time stamp taken at first validation). Keep, called
// before Validate when the cube already runs, carries those fields over
// from its running settings, so that applying the same file again changes
// nothing.
type Keeper interface {
	Keep(running any)
}

// decodeConfig is DecodeConfig for a cube whose running version is old
// (nil: a new cube).
func (t *Type) decodeConfig(c, old *Cube) (any, error) {
	if t.Config == nil {
		if len(bytes.TrimSpace(c.Config)) > 0 && string(bytes.TrimSpace(c.Config)) != "{}" && string(bytes.TrimSpace(c.Config)) != "null" {
			return nil, Errorf("config", "NF type %s has no settings", t.Name)
		}
		return nil, nil
	}
	v, err := Decode("config", c.Config, t.Config)
	if err != nil {
		return nil, err
	}
	if k, ok := v.(Keeper); ok && old != nil && old.Type == c.Type {
		if running, err := Decode("config", old.Config, t.Config); err == nil {
			k.Keep(running)
		}
	}
	if val, ok := v.(Validator); ok {
		if err := val.Validate(c); err != nil {
			return nil, Within("config", err)
		}
	}
	return v, nil
}

// DecodeEntry decodes and validates one entry of table tb.
func (tb *Table) DecodeEntry(c *Cube, raw json.RawMessage) (any, string, error) {
	field := "tables." + tb.Name
	v, err := Decode(field, raw, tb.Item)
	if err != nil {
		return nil, "", err
	}
	if val, ok := v.(Validator); ok {
		if err := val.Validate(c); err != nil {
			return nil, "", Within(field, err)
		}
	}
	return v, tb.Key(v), nil
}

// CheckEntry validates an entry value of table tb's item type (a pointer,
// as tb.Item), in place, as DecodeEntry validates a decoded one.
func (tb *Table) CheckEntry(c *Cube, v any) (string, error) {
	field := "tables." + tb.Name
	if v == nil || reflect.TypeOf(v) != reflect.TypeOf(tb.Item) {
		return "", Errorf(field, "an entry of type %T, not %T", v, tb.Item)
	}
	if val, ok := v.(Validator); ok {
		if err := val.Validate(c); err != nil {
			return "", Within(field, err)
		}
	}
	return tb.Key(v), nil
}

// Entries decodes every entry of a table in key order.
func (tb *Table) Entries(c *Cube) ([]any, error) {
	rows := c.Tables[tb.Name]
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		v, _, err := tb.DecodeEntry(c, rows[k])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
