package action

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
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
