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
	// ErrUnprocessable: the request is what the API's document describes
	// but breaks a rule the document can only state in words (an inverted
	// range, host bits set in a prefix, a program that does not compile).
	ErrUnprocessable = errors.New("unprocessable") // 422
	// ErrTooMany: the sender asks more often than its rate allows; the
	// same request later would do (P4Runtime: RESOURCE_EXHAUSTED).
	ErrTooMany = errors.New("too many requests") // 429
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

// Unprocessable is an error about a value of the right form that breaks a
// rule no schema states (ErrUnprocessable).
func Unprocessable(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Kind: ErrUnprocessable}
}

// TooMany is an error of a request over a rate limit (field: the quota).
func TooMany(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Kind: ErrTooMany}
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
