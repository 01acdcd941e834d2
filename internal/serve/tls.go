package serve

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// TLS chooses serve's certificate: from files (a mounted Secret, e.g. cert-manager's),
// reloaded when they change, or, without them, a self-signed one made at start, as
// controller-runtime's metrics server does.
type TLS struct {
	// CertFile and KeyFile are PEM files: both or neither.
	CertFile, KeyFile string
	// Names are the DNS names and IP addresses of a self-signed certificate, beyond localhost,
	// 127.0.0.1 and ::1 (in a cluster: the Service's names).
	Names []string
	// Reload is how often the files are read again besides the file-system notifications
	// (zero: 10 s).
	Reload time.Duration
}

// config returns the server's TLS configuration and a line for the log. Files are watched
// until ctx ends.
func (o *TLS) config(ctx context.Context, log *slog.Logger) (*tls.Config, []any, error) {
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, nil, errors.New("--tls-cert-file and --tls-key-file go together: give both, or neither for a self-signed certificate")
	}
	if o.CertFile != "" {
		// certwatcher logs through controller-runtime's logger: serve's JSON lines.
		ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
		w, err := certwatcher.New(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-cert-file %s, --tls-key-file %s: %w", o.CertFile, o.KeyFile, err)
		}
		if o.Reload > 0 {
			w = w.WithWatchInterval(o.Reload)
		}
		go func() {
			if err := w.Start(ctx); err != nil {
				log.Error("watching the TLS certificate", "error", err.Error())
			}
		}()
		return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: w.GetCertificate},
			[]any{"tls", "files", "cert", o.CertFile, "key", o.KeyFile}, nil
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}
	dns := []string{"localhost"}
	for _, n := range o.Names {
		if ip := net.ParseIP(n); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, n)
		}
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("helm-drift", ips, dns)
	if err != nil {
		return nil, nil, fmt.Errorf("a self-signed certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("a self-signed certificate: %w", err)
	}
	// The chain is the serving certificate and its CA: a client can pin the CA's fingerprint.
	ca := pair.Certificate[len(pair.Certificate)-1]
	sum := sha256.Sum256(ca)
	if _, err := x509.ParseCertificate(ca); err != nil {
		return nil, nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}},
		[]any{"tls", "self-signed", "names", append([]string{"localhost", "127.0.0.1", "::1"}, o.Names...), "ca_sha256", hex.EncodeToString(sum[:])}, nil
}
