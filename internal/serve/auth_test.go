package serve

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeReviews is an API server's answers to TokenReviews (by token) and SubjectAccessReviews
// (by user and path), counted.
type fakeReviews struct {
	users           map[string]string // token: user
	grants          map[string]bool   // user + " " + path
	fail            bool
	tokenN, accessN int
}

func (f *fakeReviews) guard(t *testing.T, ttl time.Duration) *Guard {
	return f.guardLogging(t, ttl, slog.New(slog.DiscardHandler))
}

func (f *fakeReviews) guardLogging(t *testing.T, ttl time.Duration, log *slog.Logger) *Guard {
	t.Helper()
	client := fake.NewClientset()
	client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.tokenN++
		if f.fail {
			return true, nil, errors.New("connection refused")
		}
		r := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview)
		if u, ok := f.users[r.Spec.Token]; ok {
			r.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: u}}
		} else {
			r.Status = authnv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, r, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.accessN++
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview)
		r.Status.Allowed = f.grants[r.Spec.User+" "+r.Spec.NonResourceAttributes.Verb+" "+r.Spec.NonResourceAttributes.Path]
		return true, r, nil
	})
	return &Guard{client: client, ttl: ttl, log: log, scraperRole: "d-helm-drift-scraper", users: map[[32]byte]cached[*authnv1.UserInfo]{}, allowed: map[string]cached[string]{}}
}

func get(h http.Handler, path, token string) (int, string) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// TestGuard: each answer of the reviews, and what the caller is told.
func TestGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metrics") })
	for _, tc := range []struct {
		name, token, path string
		fail              bool
		code              int
		body              string
	}{
		{"no token", "", "/metrics", false, 401, "no bearer token: send a Kubernetes token (Authorization: Bearer TOKEN) of an identity allowed to get /metrics"},
		{"a token the API server refuses", "forged-secret-token", "/metrics", false, 401, "did not accept the bearer token"},
		{"a user without the grant", "nobody-secret-token", "/metrics", false, 403, "nobody may not get /metrics: bind it to the ClusterRole d-helm-drift-scraper"},
		{"a user with the grant on another path", "prom-secret-token", "/report", false, 403, "prom may not get /report"},
		{"a user with the grant", "prom-secret-token", "/metrics", false, 200, "metrics"},
		{"the API server out of reach", "prom-secret-token", "/metrics", true, 500, "the TokenReview failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeReviews{users: map[string]string{"prom-secret-token": "prom", "nobody-secret-token": "nobody"},
				grants: map[string]bool{"prom get /metrics": true}, fail: tc.fail}
			var log bytes.Buffer
			code, body := get(f.guardLogging(t, time.Minute, slog.New(slog.NewJSONHandler(&log, nil))).Wrap(ok), tc.path, tc.token)
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%d %q, want %d with %q", code, body, tc.code, tc.body)
			}
			if code != 200 && !strings.Contains(log.String(), `"msg":"request refused"`) {
				t.Errorf("no log line for the refusal: %s", log.String())
			}
			if tc.token != "" && (strings.Contains(body, tc.token) || strings.Contains(log.String(), tc.token)) {
				t.Errorf("the answer or the log echoes the token: %q\n%s", body, log.String())
			}
		})
	}
}

// TestGuardCache: answers are kept for the TTL (a refusal for at most 10 s), then asked again.
func TestGuardCache(t *testing.T) {
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	f := &fakeReviews{users: map[string]string{"prom": "prom"}, grants: map[string]bool{"prom get /metrics": true}}
	g := f.guard(t, time.Minute)
	h := g.Wrap(ok)
	for range 100 {
		if code, body := get(h, "/metrics", "prom"); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	if f.tokenN != 1 || f.accessN != 1 {
		t.Errorf("100 requests within the TTL: %d TokenReviews, %d SubjectAccessReviews; want 1 and 1", f.tokenN, f.accessN)
	}
	// Expired: both asked again; a revoked grant is then refused.
	for k, c := range g.users {
		c.expires = time.Now().Add(-time.Second)
		g.users[k] = c
	}
	for k, c := range g.allowed {
		c.expires = time.Now().Add(-time.Second)
		g.allowed[k] = c
	}
	f.grants = nil
	if code, _ := get(h, "/metrics", "prom"); code != 403 || f.tokenN != 2 || f.accessN != 2 {
		t.Errorf("after the TTL, the grant revoked: %d with %d and %d reviews; want 403 with 2 and 2", code, f.tokenN, f.accessN)
	}
	// A refusal is kept 10 s at most, even with a longer TTL.
	for _, c := range g.allowed {
		if until := time.Until(c.expires); until > 10*time.Second {
			t.Errorf("a refusal kept for %v", until)
		}
	}
	// A TTL of 0 keeps nothing.
	f0 := &fakeReviews{users: map[string]string{"prom": "prom"}, grants: map[string]bool{"prom get /metrics": true}}
	h0 := f0.guard(t, 0).Wrap(ok)
	get(h0, "/metrics", "prom")
	get(h0, "/metrics", "prom")
	if f0.tokenN != 2 || f0.accessN != 2 {
		t.Errorf("TTL 0: %d and %d reviews for 2 requests, want 2 and 2", f0.tokenN, f0.accessN)
	}
}

// TestHandlerGuarded: /metrics and /report are behind the guard, the probes are not.
func TestHandlerGuarded(t *testing.T) {
	f := &fakeReviews{}
	s := &Server{Guard: f.guard(t, time.Minute)}
	s.figures.Store(&figures{})
	h := s.Handler()
	for path, want := range map[string]int{"/metrics": 401, "/report": 401, "/healthz": 200, "/readyz": 200} {
		if code, body := get(h, path, ""); code != want {
			t.Errorf("%s without a token: %d %s, want %d", path, code, body, want)
		}
	}
}
