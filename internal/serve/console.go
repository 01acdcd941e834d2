package serve

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/output"
)

// tokenCookie keeps a token pasted into the sign-in page for the browser's session: HttpOnly
// (no script reads it), Secure over TLS, SameSite=Strict (no other site's page sends it). The
// guard checks it as it checks a bearer token.
const tokenCookie = "helm-drift-token"

// page serves the console's pages behind the guard: the table at /, a release at
// /release/NS/NAME and a HelmRelease at /helmrelease/NS/NAME. A browser without a token is sent
// to the sign-in page.
func (s *Server) page(h http.HandlerFunc) http.Handler {
	if s.Guard == nil {
		return h
	}
	return s.Guard.wrap(h, true)
}

func (s *Server) consolePage(w http.ResponseWriter, r *http.Request) {
	c := s.last.Load()
	if c == nil {
		http.Error(w, "no run has succeeded yet: the console shows the last successful run", http.StatusServiceUnavailable)
		return
	}
	p := output.ConsolePage{Title: "helm-drift: the releases and HelmReleases of the cluster", Rows: c.consoleRows(), Footer: output.Footer(c.stamp),
		Served: s.Guard != nil, History: true}
	s.writePage(w, p)
}

func (s *Server) releasePage(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := s.last.Load()
		if c == nil {
			http.Error(w, "no run has succeeded yet: the console shows the last successful run", http.StatusServiceUnavailable)
			return
		}
		ns, name := r.PathValue("namespace"), r.PathValue("name")
		what := "Helm release " + ns + "/" + name
		if kind == diff.KindHelmRelease {
			what = "HelmRelease " + ns + "/" + name
		}
		section, ok := c.sections[kind+"/"+ns+"/"+name]
		if !ok {
			for _, row := range c.rows {
				if k, rns, rname := row.Identity(); k == kind && rns == ns && rname == name && row.Error != "" {
					section, ok = template.HTML("<section class=\"release\"><h2>"+template.HTMLEscapeString(what)+"</h2><p>not measured: "+
						template.HTMLEscapeString(row.Error)+"</p></section>"), true
				}
			}
		}
		if !ok {
			http.Error(w, what+" was not measured by the last run (it does not exist, or is outside --namespaces)", http.StatusNotFound)
			return
		}
		sections := []template.HTML{section}
		if s.History != nil {
			timeline, err := output.TimelineSection(what, s.History.Entries(kind+"/"+ns+"/"+name))
			if err != nil {
				s.Log.Error("writing a release's history", "error", err.Error())
			} else {
				sections = append(sections, timeline)
			}
		}
		p := output.ConsolePage{Title: "helm-drift: " + what, Sections: sections, Footer: output.Footer(c.stamp), Back: "/", Served: s.Guard != nil}
		if s.ExternalURL != "" {
			p.Permalink = strings.TrimSuffix(s.ExternalURL, "/") + r.URL.Path
		}
		s.writePage(w, p)
	}
}

func (s *Server) writePage(w http.ResponseWriter, p output.ConsolePage) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if err := output.WriteConsole(w, p); err != nil {
		s.Log.Error("writing a console page", "error", err.Error())
	}
}

var signinTemplate = template.Must(template.New("signin").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>helm-drift: sign in</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}textarea{width:100%;font:13px ui-monospace,monospace}button{font:inherit;padding:.3rem 1rem}.err{color:#a40e26}code{background:#f6f8fa;padding:0 .2rem}</style>
</head><body>
<h1>helm-drift</h1>
{{if .}}<p class="err" role="alert">{{.}}</p>{{end}}
<form method="post" action="/signin">
<p><label for="token">A Kubernetes token of an identity allowed to read this console</label></p>
<textarea id="token" name="token" rows="6" required autofocus autocomplete="off" spellcheck="false"></textarea>
<p><button type="submit">Sign in</button></p>
</form>
<p>For example <code>kubectl -n NAMESPACE create token SERVICEACCOUNT</code>, for a ServiceAccount bound to the
chart's <code>-viewer</code> ClusterRole (get on <code>/</code>, <code>/release/*</code>, <code>/helmrelease/*</code>). The token is kept
for this browser session only, in a cookie no script can read, and checked with the API server on every request.</p>
</body></html>
`))

// signinPage asks for a token.
func (s *Server) signinPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	signinTemplate.Execute(w, r.URL.Query().Get("error"))
}

// signin keeps the token pasted into the sign-in page in the session's cookie. A form posted
// from another site's page is refused (its Origin is not this server).
func (s *Server) signin(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "sign-in refused: the form was not posted from this server's page", http.StatusForbidden)
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	if token == "" {
		http.Redirect(w, r, "/signin?error="+url.QueryEscape("Paste a token."), http.StatusSeeOther)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: token, Path: "/", HttpOnly: true, Secure: s.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signout forgets the session's token.
func (s *Server) signout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// sameOrigin says a POST comes from this server's own page: its Origin (or, without one, its
// Referer) names this host.
func sameOrigin(r *http.Request) bool {
	from := r.Header.Get("Origin")
	if from == "" {
		from = r.Header.Get("Referer")
	}
	if from == "" || from == "null" {
		return false
	}
	u, err := url.Parse(from)
	return err == nil && u.Host == r.Host
}
