package action

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
)

// Registry reaches a chart repository or OCI registry, with helm upgrade's flags.
type Registry struct {
	PlainHTTP, Insecure, PassCredentials bool
	CAFile, CertFile, KeyFile            string
	Username, Password                   string
}

// HTTPClient is the client for the registry's TLS settings; nil when there are none.
func (r Registry) HTTPClient() (*http.Client, error) {
	if r.CertFile == "" && r.KeyFile == "" && r.CAFile == "" && !r.Insecure {
		return nil, nil
	}
	conf := &tls.Config{InsecureSkipVerify: r.Insecure} //nolint:gosec // asked for with --insecure-skip-tls-verify
	if r.CertFile != "" || r.KeyFile != "" {
		pair, err := tls.LoadX509KeyPair(r.CertFile, r.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--cert-file/--key-file: %w", err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	if r.CAFile != "" {
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", r.CAFile)
		}
		conf.RootCAs = pool
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: conf, Proxy: http.ProxyFromEnvironment}}, nil
}

// registryCtors are one Helm SDK's registry client constructors: Helm 3's and Helm 4's
// registry packages have the same ones, each for its own types.
type registryCtors[O, C any] struct {
	cache       func(bool) O
	writer      func(io.Writer) O
	credentials func(string) O
	basicAuth   func(username, password string) O
	plainHTTP   func() O
	httpClient  func(*http.Client) O
	newClient   func(...O) (C, error)
}

// registryClient makes the registry client r asks for (its credentials, plain HTTP, TLS), as
// helm upgrade makes it, with one SDK's constructors k; log receives what the client prints.
func registryClient[O, C any](r Registry, log io.Writer, credentialsFile string, k registryCtors[O, C]) (C, error) {
	opts := []O{k.cache(true), k.writer(log), k.credentials(credentialsFile), k.basicAuth(r.Username, r.Password)}
	if r.PlainHTTP {
		opts = append(opts, k.plainHTTP())
	}
	hc, err := r.HTTPClient()
	if err != nil {
		var none C
		return none, &InputError{err}
	}
	if hc != nil {
		opts = append(opts, k.httpClient(hc))
	}
	c, err := k.newClient(opts...)
	if err != nil {
		return c, &InputError{err}
	}
	return c, nil
}
