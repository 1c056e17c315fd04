package cube

import (
	"errors"
	"fmt"
)

// Error kinds, mapped to HTTP status codes by the API.
var (
	ErrInvalid  = errors.New("invalid")   // 400
	ErrNotFound = errors.New("not found") // 404
	ErrConflict = errors.New("conflict")  // 409
	// ErrForbidden: the request is valid but its sender may not make it
	// (another tenant's resource, a quota).
	ErrForbidden = errors.New("forbidden") // 403
	// ErrFull: a table would hold more entries than it may; invalid input
	// (400) that P4Runtime reports as RESOURCE_EXHAUSTED.
	ErrFull = fmt.Errorf("table full: %w", ErrInvalid)
)

// FieldError names the field of the request that is wrong.
type FieldError struct {
	Field string
	Msg   string
	Kind  error
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Msg)
}

func (e *FieldError) Unwrap() error { return e.Kind }

// Errorf is an invalid-input error about field.
func Errorf(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Kind: ErrInvalid}
}

// Full is an error about a table (field) with no room for more entries.
func Full(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Kind: ErrFull}
}

// NotFound is an error about a missing object named by field.
func NotFound(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Kind: ErrNotFound}
}

// Conflict is an error about an object that clashes with existing state.
func Conflict(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Kind: ErrConflict}
}

// Forbidden is an error about something the sender may not do.
func Forbidden(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Kind: ErrForbidden}
}

// Within prefixes the field of err with parent ("ports[1]" + "peer").
func Within(parent string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		f := parent
		if fe.Field != "" {
			f = parent + "." + fe.Field
		}
		return &FieldError{Field: f, Msg: fe.Msg, Kind: fe.Kind}
	}
	return &FieldError{Field: parent, Msg: err.Error(), Kind: ErrInvalid}
}
