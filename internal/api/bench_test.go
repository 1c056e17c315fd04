package api

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/edgenf/edgenf/internal/client"
)

// BenchmarkEntryChange adds and deletes one ddos blacklist entry through the
// API with the administrator's token and with a tenant's (ownership and
// quota checks): the checks must cost nothing measurable.
func BenchmarkEntryChange(b *testing.B) {
	url0 := server(b)
	for _, tok := range []struct{ name, token, tenant string }{{"admin", adminTok, ""}, {"tenant", t1Tok, "t1"}} {
		cl := client.New("", url0, tok.token)
		name := "dd" + tok.name
		if err := cl.Do("POST", "/v1/cubes", map[string]any{"name": name, "type": "ddos"}, nil); err != nil {
			b.Fatal(err)
		}
		path := "/v1/cubes/" + name + "/tables/blacklist_src"
		b.Run(tok.name, func(b *testing.B) {
			for i := range b.N {
				prefix := fmt.Sprintf("198.19.%d.%d/32", i>>8&0xff, i&0xff)
				if err := cl.Do("POST", path, map[string]string{"prefix": prefix}, nil); err != nil {
					b.Fatal(err)
				}
				if err := cl.Do("DELETE", path+"/"+url.PathEscape(prefix), nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
