package nftest

import (
	"testing"

	"github.com/edgenf/edgenf/internal/btflayout"
	"github.com/edgenf/edgenf/internal/cube"
)

// CheckLayouts fails t when a Go type of mirrors does not have the layout
// of the C struct its key names, in the object of each of typ's hooks
// (internal/btflayout). Every NF lists its mirrors in abi_test.go.
func CheckLayouts(t *testing.T, typ *cube.Type, mirrors map[string]any) {
	t.Helper()
	for _, h := range typ.Hooks {
		obj, err := typ.Object(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := btflayout.Check(obj, mirrors); err != nil {
			t.Errorf("%s object:\n%v", h, err)
		}
	}
}
