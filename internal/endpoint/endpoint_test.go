package endpoint

import (
	"strings"
	"testing"
)

// Validate names the field at fault; Equal and Clone cover every field.
func TestValidateEqualClone(t *testing.T) {
	good := Endpoint{Name: "enf0123456789ab", Tenant: "red", Cube: "rr", Interface: "enf0123456789ab",
		Addresses: []string{"198.18.5.2/24", "2001:db8:5::2/64"}, Gateways: []string{"169.254.1.1", "fe80::1"}, Pod: &Pod{Namespace: "red", Name: "web-0"}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit  func(*Endpoint)
		field string
	}{
		{func(e *Endpoint) { e.Gateways = []string{"169.254.1.1/32"} }, "gateways[0]"},
		{func(e *Endpoint) { e.Gateways = []string{"169.254.1.1", "fe80::1", "169.254.1.2"} }, "gateways"},
		{func(e *Endpoint) { e.Addresses = []string{"198.18.5.2"} }, "addresses[0]"},
		{func(e *Endpoint) { e.Interface = "" }, "interface"},
	} {
		e := good.Clone()
		c.edit(e)
		if err := e.Validate(); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v, want an error on %s", e, err, c.field)
		}
	}
	c := good.Clone()
	if !c.Equal(&good) {
		t.Fatal("a clone differs")
	}
	c.Gateways[0] = "169.254.1.9"
	if c.Equal(&good) || good.Gateways[0] != "169.254.1.1" {
		t.Error("Clone shares the gateways, or Equal ignores them")
	}
}
