package serve

import (
	"context"
	"crypto/sha256"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Guard lets in only whom the cluster lets in, as controller-runtime's metrics filter
// (filters.WithAuthenticationAndAuthorization) does: the request's bearer token is checked
// with a TokenReview, then the request (a non-resource URL and its verb: get on /metrics) with
// a SubjectAccessReview of the token's user. Both answers are cached for a TTL, so that a
// scrape every 15 s is not two API calls each time.
//
// It makes the two reviews itself with client-go rather than through k8s.io/apiserver's
// delegating authenticator and authorizer, which controller-runtime's filter uses: those
// import the API server's webhook machinery (gRPC, OpenTelemetry, the konnectivity client),
// minutes of compilation on a cold machine for two POSTs and a cache.
type Guard struct {
	client kubernetes.Interface
	ttl    time.Duration
	log    *slog.Logger
	// scraperRole and viewerRole name the ClusterRoles that grant /metrics and /report, and
	// the console's pages, for the 403's hint.
	scraperRole, viewerRole string

	flight  singleflight.Group
	mu      sync.Mutex
	users   map[[32]byte]cached[*authnv1.UserInfo] // by the token's SHA-256: the token is not kept
	allowed map[string]cached[string]              // by user and request: "" allowed, else why not
}

// cached is an answer and when it stops counting.
type cached[T any] struct {
	val     T
	ok      bool
	expires time.Time
}

// GuardOptions configure a Guard.
type GuardOptions struct {
	// Config is serve's own identity: it needs create on tokenreviews and subjectaccessreviews.
	Config *rest.Config
	// TTL is how long an answer is cached: a revoked token or binding is refused at most this
	// long after. A refusal is cached for at most 10 s, so that a new grant is seen soon.
	TTL time.Duration
	// ScraperRole is the ClusterRole that grants /metrics and /report, ViewerRole the one that
	// grants the console's pages (named in a 403's hint); empty: a ClusterRole with get on them.
	ScraperRole, ViewerRole string
	// Log receives a line per refused request (never the token).
	Log *slog.Logger
}

// maxCached bounds each cache: past it, the expired answers are dropped, then all of them.
const maxCached = 4096

// NewGuard returns the guard; it makes no request until the first one comes.
func NewGuard(o GuardOptions) (*Guard, error) {
	cfg := rest.CopyConfig(o.Config)
	cfg.Timeout = 10 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Guard{client: client, ttl: o.TTL, log: log, scraperRole: o.ScraperRole, viewerRole: o.ViewerRole,
		users: map[[32]byte]cached[*authnv1.UserInfo]{}, allowed: map[string]cached[string]{}}, nil
}

// Wrap returns next behind the guard: 401 without a token the API server accepts, 403 for a
// user it does not allow the request's verb on its path, 500 when the API server cannot
// answer; each with a body that says what is missing and never echoes the token.
func (g *Guard) Wrap(next http.Handler) http.Handler { return g.wrap(next, false) }

// wrap is Wrap; for a page (a browser's), a request without an accepted token is sent to the
// sign-in page, and a refusal is a page that says why, with a way to sign out.
func (g *Guard) wrap(next http.Handler, page bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if page {
			w = &pageRefusals{ResponseWriter: w, r: r}
		}
		verb, path := strings.ToLower(r.Method), r.URL.Path
		if verb == "head" {
			verb = "get"
		}
		token, ok := bearer(r)
		if !ok {
			g.refuse(w, r, http.StatusUnauthorized, "", "no bearer token: send a Kubernetes token (Authorization: Bearer TOKEN) of an identity allowed to "+verb+" "+path)
			return
		}
		user, err := g.authenticate(r.Context(), token)
		if err != nil {
			g.refuse(w, r, http.StatusInternalServerError, "", "the token could not be checked: "+err.Error())
			return
		}
		if user == nil {
			g.refuse(w, r, http.StatusUnauthorized, "", "the API server did not accept the bearer token (expired, revoked, malformed, or from another cluster)")
			return
		}
		why, err := g.authorize(r.Context(), user, verb, path)
		if err != nil {
			g.refuse(w, r, http.StatusInternalServerError, user.Username, "the request could not be authorised: "+err.Error())
			return
		}
		if why != "" {
			g.refuse(w, r, http.StatusForbidden, user.Username, fmt.Sprintf("%s may not %s %s: bind it to %s%s", user.Username, verb, path, g.role(path), why))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearer is the request's bearer token: its Authorization header's (a scraper, an
// authenticating proxy), else the sign-in page's cookie (a browser).
func bearer(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
		token = strings.TrimSpace(token)
		return token, ok && strings.EqualFold(scheme, "bearer") && token != ""
	}
	if c, err := r.Cookie(tokenCookie); err == nil && c.Value != "" {
		return c.Value, true
	}
	return "", false
}

// pageRefusals turns the guard's refusals of a page into what a browser can act on: 401 a
// redirect to the sign-in page (saying why when a token was refused), 403 a page with the
// reason and a sign-out button.
type pageRefusals struct {
	http.ResponseWriter
	r *http.Request
}

func (p *pageRefusals) refuse(code int, msg string) bool {
	switch code {
	case http.StatusUnauthorized:
		to := "/signin"
		if _, had := bearer(p.r); had {
			to += "?error=" + url.QueryEscape(msg)
		}
		http.Redirect(p.ResponseWriter, p.r, to, http.StatusSeeOther)
		return true
	case http.StatusForbidden:
		p.Header().Set("Content-Type", "text/html; charset=utf-8")
		p.WriteHeader(code)
		fmt.Fprintf(p, "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>helm-drift: forbidden</title></head><body><h1>Forbidden</h1><p>%s</p>"+
			"<form method=\"post\" action=\"/signout\"><button type=\"submit\">Sign in with another token</button></form></body></html>\n", template.HTMLEscapeString(msg))
		return true
	}
	return false
}

// authenticate returns the token's user, nil when the API server refuses the token; an error
// when the TokenReview could not be made.
func (g *Guard) authenticate(ctx context.Context, token string) (*authnv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	if c, ok := lookup(&g.mu, g.users, key); ok {
		return c.val, nil
	}
	v, err, _ := g.flight.Do("token "+string(key[:]), func() (any, error) {
		review, err := g.client.AuthenticationV1().TokenReviews().Create(context.WithoutCancel(ctx),
			&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("the TokenReview failed: %w", err)
		}
		var user *authnv1.UserInfo
		if review.Status.Authenticated {
			user = &review.Status.User
		}
		store(&g.mu, g.users, key, cached[*authnv1.UserInfo]{val: user, ok: user != nil}, g.ttl)
		return user, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*authnv1.UserInfo), nil
}

// authorize returns "" when the API server allows user verb on path, else why not.
func (g *Guard) authorize(ctx context.Context, user *authnv1.UserInfo, verb, path string) (string, error) {
	key := strings.Join([]string{user.Username, user.UID, strings.Join(user.Groups, ","), verb, path}, "\x00")
	if c, ok := lookup(&g.mu, g.allowed, key); ok {
		return c.val, nil
	}
	v, err, _ := g.flight.Do("access "+key, func() (any, error) {
		extra := map[string]authzv1.ExtraValue{}
		for k, v := range user.Extra {
			extra[k] = authzv1.ExtraValue(v)
		}
		review, err := g.client.AuthorizationV1().SubjectAccessReviews().Create(context.WithoutCancel(ctx), &authzv1.SubjectAccessReview{
			Spec: authzv1.SubjectAccessReviewSpec{User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
				NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb}}}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("the SubjectAccessReview failed: %w", err)
		}
		why := ""
		if !review.Status.Allowed {
			why = " (the API server: not allowed"
			if review.Status.Reason != "" {
				why = " (the API server: " + review.Status.Reason
			}
			why += ")"
		}
		store(&g.mu, g.allowed, key, cached[string]{val: why, ok: why == ""}, g.ttl)
		return why, nil
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// lookup returns key's answer while it counts.
func lookup[K comparable, T any](mu *sync.Mutex, m map[K]cached[T], key K) (cached[T], bool) {
	mu.Lock()
	defer mu.Unlock()
	c, ok := m[key]
	if ok && time.Now().After(c.expires) {
		delete(m, key)
		return c, false
	}
	return c, ok
}

// store keeps an answer for ttl, a refusal for at most 10 s.
func store[K comparable, T any](mu *sync.Mutex, m map[K]cached[T], key K, c cached[T], ttl time.Duration) {
	if !c.ok {
		ttl = min(ttl, 10*time.Second)
	}
	if ttl <= 0 {
		return
	}
	now := time.Now()
	c.expires = now.Add(ttl)
	mu.Lock()
	defer mu.Unlock()
	if len(m) >= maxCached {
		for k, e := range m {
			if now.After(e.expires) {
				delete(m, k)
			}
		}
		if len(m) >= maxCached {
			clear(m)
		}
	}
	m[key] = c
}

// role names what grants path: the scraper's ClusterRole for /metrics and /report, the
// viewer's for the console's pages.
func (g *Guard) role(path string) string {
	role := g.viewerRole
	if path == "/metrics" || path == "/report" {
		role = g.scraperRole
	}
	if role != "" {
		return "the ClusterRole " + role
	}
	return "a ClusterRole with get on this non-resource URL"
}

func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, code int, user, msg string) {
	attrs := []any{"status", code, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr}
	if user != "" {
		attrs = append(attrs, "user", user)
	}
	g.log.Warn("request refused", append(attrs, "reason", msg)...)
	if p, ok := w.(*pageRefusals); ok && p.refuse(code, msg) {
		return
	}
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="helm-drift"`)
	}
	http.Error(w, http.StatusText(code)+": "+msg, code)
}
