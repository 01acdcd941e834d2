package serve

import (
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/diff"
)

// TestConsoleSignIn: a browser without a token is sent to the sign-in page; the token it posts
// from that page is kept in an HttpOnly, SameSite=Strict (and, over TLS, Secure) cookie and
// checked like a bearer token; a form posted from another site is refused; a user without the
// grant gets a page that says why; signing out forgets the token.
func TestConsoleSignIn(t *testing.T) {
	f := &fakeReviews{users: map[string]string{"viewer-token": "viewer", "other-token": "other"}, grants: map[string]bool{"viewer get /": true, "viewer get /release/apps/web": true}}
	g := f.guard(t, time.Minute)
	g.viewerRole = "d-helm-drift-viewer"
	s := &Server{Guard: g, TLS: &TLS{}}
	s.figures.Store(&figures{})
	s.last.Store(&record{rows: []diff.SummaryRow{{Release: "web", Namespace: "apps", Counts: map[compare.Class]int{}}},
		sections: map[string]template.HTML{"release/apps/web": `<section class="release"><h2>Helm release apps/web</h2></section>`}})
	h := s.Handler()
	do := func(method, path string, header map[string]string, form url.Values) *http.Response {
		var body *strings.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		} else {
			body = strings.NewReader("")
		}
		req := httptest.NewRequest(method, "https://drift.example"+path, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}

	if res := do("GET", "/", nil, nil); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin" {
		t.Errorf("/ without a token: %d to %q, want a redirect to /signin", res.StatusCode, res.Header.Get("Location"))
	}
	if res := do("GET", "/signin", nil, nil); res.StatusCode != http.StatusOK {
		t.Errorf("/signin: %d", res.StatusCode)
	}
	if res := do("POST", "/signin", map[string]string{"Origin": "https://evil.example"}, url.Values{"token": {"viewer-token"}}); res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
		t.Errorf("a sign-in posted from another site: %d, cookies %v; want 403 and none", res.StatusCode, res.Cookies())
	}
	res := do("POST", "/signin", map[string]string{"Origin": "https://drift.example"}, url.Values{"token": {"viewer-token"}})
	cookies := res.Cookies()
	if res.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("sign-in: %d, cookies %v", res.StatusCode, cookies)
	}
	if c := cookies[0]; c.Name != tokenCookie || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge != 0 {
		t.Errorf("the session cookie: %+v; want HttpOnly, Secure, SameSite=Strict, for the session", c)
	}
	cookie := map[string]string{"Cookie": tokenCookie + "=viewer-token"}
	if res := do("GET", "/", cookie, nil); res.StatusCode != http.StatusOK {
		t.Errorf("/ with the session's cookie: %d", res.StatusCode)
	}
	if res := do("GET", "/release/apps/web", cookie, nil); res.StatusCode != http.StatusOK {
		t.Errorf("/release/apps/web with the session's cookie: %d", res.StatusCode)
	}
	if res := do("GET", "/release/apps/nope", map[string]string{"Authorization": "Bearer viewer-token"}, nil); res.StatusCode != http.StatusForbidden {
		t.Errorf("a page the viewer is not granted: %d, want 403", res.StatusCode)
	} else if b, _ := io.ReadAll(res.Body); !strings.Contains(string(b), "viewer may not get /release/apps/nope: bind it to the ClusterRole d-helm-drift-viewer") {
		t.Errorf("the 403 page does not name the viewer's ClusterRole:\n%s", b)
	}
	if res := do("GET", "/", map[string]string{"Cookie": tokenCookie + "=other-token"}, nil); res.StatusCode != http.StatusForbidden ||
		res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("a user without the grant: %d %s, want a 403 page", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if res := do("GET", "/", map[string]string{"Cookie": tokenCookie + "=forged"}, nil); res.StatusCode != http.StatusSeeOther ||
		!strings.HasPrefix(res.Header.Get("Location"), "/signin?error=") || strings.Contains(res.Header.Get("Location"), "forged") {
		t.Errorf("a refused cookie: %d to %q, want the sign-in page saying why (not the token)", res.StatusCode, res.Header.Get("Location"))
	}
	res = do("POST", "/signout", nil, nil)
	if c := res.Cookies(); len(c) != 1 || c[0].MaxAge >= 0 || res.Header.Get("Location") != "/signin" {
		t.Errorf("sign-out: cookies %v to %q, want the cookie cleared", c, res.Header.Get("Location"))
	}
}
