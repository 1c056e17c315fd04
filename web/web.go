// Package web is the dashboard edgenfd serves at /ui/: hand-written ES
// modules and CSS, embedded as they are (no build step), and htm's Preact
// bundle, vendored from npm by `make web` (see vendor.sum).
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// Assets are the dashboard's files, by path under static/.
func Assets() fs.FS {
	sub, _ := fs.Sub(static, "static")
	return sub
}

type asset struct {
	body  []byte
	etag  string
	ctype string
}

// Security headers of every asset. The page runs only its own scripts
// and styles and talks only to its own origin: a cube or tenant name
// carrying markup can never run, and the token (kept in sessionStorage)
// never leaves for another site. No framing (clickjacking).
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"X-Frame-Options":        "DENY",
	"Referrer-Policy":        "no-referrer",
	// revalidated with the ETag: a new daemon serves new assets at once
	"Cache-Control": "no-cache",
}

// Handler serves the assets under prefix (e.g. "/ui/"): prefix itself is
// index.html; the prefix without its slash redirects to it.
func Handler(prefix string) http.Handler {
	assets := map[string]*asset{}
	fs.WalkDir(Assets(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Assets(), p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		assets[p] = &asset{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: ctype}
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path+"/" == prefix {
			http.Redirect(w, r, prefix, http.StatusMovedPermanently)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, prefix)
		if name == "" {
			name = "index.html"
		}
		a := assets[name]
		if a == nil {
			http.NotFound(w, r)
			return
		}
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", a.ctype)
		w.Header().Set("ETag", a.etag)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
	})
}
