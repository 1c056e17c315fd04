package main

import (
	"net/url"
	"strings"
)

// v1 is the API path of a resource: /v1/ and the segments, each escaped,
// so that a name or key holding '/', '?', '%' or '#' (a prefix as a table
// key, a name the daemon will refuse) reaches the daemon as one segment.
func v1(segments ...string) string {
	var b strings.Builder
	b.WriteString("/v1")
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}
