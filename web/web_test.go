package web

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestVendorMatchesSum: the vendored files embedded are those make web
// fetches from npm (vendor.sum), byte for byte.
func TestVendorMatchesSum(t *testing.T) {
	f, err := os.Open("vendor.sum")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("vendor.sum: bad line %q", sc.Text())
		}
		b, err := fs.ReadFile(Assets(), strings.TrimPrefix(name, "static/"))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("%s differs from vendor.sum: run make web", name)
		}
	}
	if n == 0 {
		t.Fatal("vendor.sum lists nothing")
	}
}

// TestReferencesResolve: every file the page and its modules load is
// embedded.
func TestReferencesResolve(t *testing.T) {
	ref := regexp.MustCompile(`(?:src|href)="([^"]+)"|from '([^']+)'`)
	fs.WalkDir(Assets(), ".", func(p string, d fs.DirEntry, err error) error {
		if d.IsDir() || !(strings.HasSuffix(p, ".html") || strings.HasSuffix(p, ".js")) || strings.HasPrefix(p, "vendor/") {
			return err
		}
		b, _ := fs.ReadFile(Assets(), p)
		dir := p[:strings.LastIndex(p, "/")+1]
		for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
			target := m[1] + m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "data:") {
				t.Errorf("%s loads %s: the page loads nothing from elsewhere", p, target)
				continue
			}
			clean := strings.TrimPrefix(cleanPath(dir+target), "/")
			if _, err := fs.Stat(Assets(), clean); err != nil {
				t.Errorf("%s loads %s (%s): not embedded", p, target, clean)
			}
		}
		return nil
	})
}

func cleanPath(p string) string {
	var out []string
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case ".", "":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	return strings.Join(out, "/")
}

// TestHandler: the index at the prefix, a redirect to it, types, the
// security headers, revalidation by ETag, 404 for anything else.
func TestHandler(t *testing.T) {
	h := Handler("/ui/")
	get := func(path string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := get("/ui"); w.Code != 301 || w.Header().Get("Location") != "/ui/" {
		t.Errorf("/ui: %d %s", w.Code, w.Header().Get("Location"))
	}
	w := get("/ui/")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `src="js/app.js"`) || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("/ui/: %d %s", w.Code, w.Header().Get("Content-Type"))
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP: %q", csp)
	}
	if w := get("/ui/", "If-None-Match", w.Header().Get("ETag")); w.Code != 304 {
		t.Errorf("revalidation: %d", w.Code)
	}
	if w := get("/ui/js/app.js"); w.Code != 200 || !strings.Contains(w.Header().Get("Content-Type"), "javascript") {
		t.Errorf("app.js: %d %s", w.Code, w.Header().Get("Content-Type"))
	}
	for _, p := range []string{"/ui/nope.js", "/ui/../web.go", "/ui/static/index.html"} {
		if w := get(p); w.Code != 404 {
			t.Errorf("%s: %d", p, w.Code)
		}
	}
}
