package testenv

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"k8s.io/client-go/rest"
)

// APIFront serves, over TLS on loopback, a proxy to the API server of cfg. asItself: the proxy
// authenticates with cfg's credentials, the client's dropped; else the client's are passed on
// (cfg's TLS not verified). handle gets each request with forward, which proxies it and
// returns the API server's status, and decides what happens around it (a pause, a closed
// connection, a server stopped after, a count). It closes when the test ends.
func APIFront(t testing.TB, cfg *rest.Config, asItself bool, handle func(w http.ResponseWriter, r *http.Request, forward func() int)) *httptest.Server {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg
	if !asItself {
		tc = &rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	}
	transport, err := rest.TransportFor(tc)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Transport: transport, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		if asItself {
			r.Out.Header.Del("Authorization")
		}
	}}
	front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handle(w, r, func() int {
			rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
			proxy.ServeHTTP(rec, r)
			return rec.status
		})
	}))
	t.Cleanup(front.Close)
	return front
}

// statusRecorder keeps the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets the proxy flush a watch through the recorder (http.ResponseController).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
