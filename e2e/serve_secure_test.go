package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// saToken creates a ServiceAccount in ns of kc's cluster and returns a token for it from the
// TokenRequest API.
func saToken(t *testing.T, kc kubernetes.Interface, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := kc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}

// scrape GETs path from p with token (none when empty) and returns the status and body.
func (p *serveProcess) scrape(t *testing.T, path, token string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.url+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

// servedChain returns the certificates the server at url presents, unverified.
func servedChain(t *testing.T, url string) []*x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v", url, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates
}

// trustServed waits for p's self-signed TLS listener and makes p's client trust only the CA
// the server presents with its certificate; it returns the chain.
func trustServed(t *testing.T, p *serveProcess) []*x509.Certificate {
	t.Helper()
	var chain []*x509.Certificate
	testenv.Eventually(t, 30*time.Second, "the TLS listener", func() (bool, string) {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(p.url, "https://"), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, err.Error() + "\n" + p.log()
		}
		chain = conn.ConnectionState().PeerCertificates
		conn.Close()
		return true, ""
	})
	ca := chain[len(chain)-1]
	if !ca.IsCA || len(chain) < 2 {
		t.Fatalf("the self-signed chain does not end with its CA: %d certificates, last IsCA %v", len(chain), ca.IsCA)
	}
	p.client = verifyingClient(ca)
	return chain
}

// verifyingClient is an HTTPS client that trusts only ca.
func verifyingClient(ca *x509.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// reviewCounter counts the TokenReviews and SubjectAccessReviews that pass through an API
// front, and the paths the API server refused (403).
type reviewCounter struct {
	tokenReviews, accessReviews atomic.Int64
	mu                          sync.Mutex
	refused                     []string
}

// front is an API front (testenv.APIFront, the client's token passed on) that counts.
func (c *reviewCounter) front(t *testing.T) *httptest.Server {
	t.Helper()
	return testenv.APIFront(t, cluster.Config, false, func(w http.ResponseWriter, r *http.Request, forward func() int) {
		if r.Method == http.MethodPost {
			switch {
			case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
				c.tokenReviews.Add(1)
			case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
				c.accessReviews.Add(1)
			}
		}
		if forward() == http.StatusForbidden {
			c.mu.Lock()
			c.refused = append(c.refused, r.Method+" "+r.URL.RequestURI())
			c.mu.Unlock()
		}
	})
}

// refusals are the requests the API server refused so far.
func (c *reviewCounter) refusals() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.refused...)
}

// TestServeSecure: helm drift serve as the chart installs it (--auth kubernetes, HTTPS) lets in
// only whom the cluster lets in. Run under the chart's ServiceAccount (its RBAC: TokenReviews
// and SubjectAccessReviews, nothing more for it): a scrape with no token is 401, with the token
// of a ServiceAccount without the grant 403, with one the chart binds to its scraper
// ClusterRole 200 with the metrics, with a ServiceAccount token of another API server (a second
// test environment) 401; no refusal echoes the token. 100 scrapes within the cache's TTL make
// one review of each kind; a revoked binding is refused within one TTL. The self-signed
// certificate verifies against the CA it is served with; a certificate from files verifies
// against its CA and, replaced on disk, is served without a restart. The probes stay open.
func TestServeSecure(t *testing.T) {
	t.Parallel() // its own namespace, Helm homes and processes
	h := clusterHelm(t, "helm3")
	ns := cluster.Namespace(t)
	ctx := context.Background()
	kc := cluster.Kube

	// A second API server, started beside while the first steps run.
	other := make(chan *testenv.Env, 1)
	go func() {
		env, err := testenv.Start()
		if err != nil {
			t.Errorf("a second test environment: %v", err)
			other <- nil
			return
		}
		other <- env
	}()
	t.Cleanup(func() {
		if env := <-other; env != nil {
			env.Stop()
		}
	})

	h.run(t, false, nil, "install", "secure", "charts/helm-drift", "-n", ns,
		"--set", "scraper.subjects[0].kind=ServiceAccount,scraper.subjects[0].name=prom,scraper.subjects[0].namespace="+ns)
	t.Cleanup(func() { h.run(t, false, nil, "uninstall", "secure", "-n", ns) })
	own, err := kc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "secure-helm-drift", &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prom := saToken(t, kc, ns, "prom")
	nobody := saToken(t, kc, ns, "nobody")

	counter := &reviewCounter{}
	front := counter.front(t)
	const ttl = 10 * time.Second
	// The chart's arguments (charts/helm-drift/templates/deployment.yaml) but the interval.
	p := startServe(t, tokenKubeconfig(t, front.URL, own.Status.Token), "--auth=kubernetes", "--auth-cache-ttl="+ttl.String(),
		"--namespaces="+ns, "--scraper-role=secure-helm-drift-scraper", "--tls-names=secure-helm-drift,secure-helm-drift."+ns+",secure-helm-drift."+ns+".svc")

	// TLS: the served chain ends with its CA; the serving certificate verifies against it.
	chain := trustServed(t, p)
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: p.client.Transport.(*http.Transport).TLSClientConfig.RootCAs, DNSName: "secure-helm-drift." + ns + ".svc"}); err != nil {
		t.Errorf("the self-signed certificate does not name the chart's Service: %v", err)
	}
	if !strings.Contains(p.log(), `"tls":"self-signed"`) || !strings.Contains(p.log(), `"ca_sha256"`) {
		t.Errorf("the log does not say the certificate is self-signed, with its CA's fingerprint:\n%s", p.log())
	}

	// The probes stay open; the first run succeeds (serve reads the cluster as before).
	if code, body, _ := p.scrape(t, "/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz without a token: %d %s", code, body)
	}
	testenv.Eventually(t, 60*time.Second, "/readyz without a token", func() (bool, string) {
		code, body, _ := p.scrape(t, "/readyz", "")
		return code == http.StatusOK, fmt.Sprintf("%d %s\n%s", code, body, p.log())
	})

	// No token: 401, and what to send.
	for _, path := range []string{"/metrics", "/report"} {
		code, body, header := p.scrape(t, path, "")
		if code != http.StatusUnauthorized || !strings.Contains(body, "no bearer token") || header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s without a token: %d %q (WWW-Authenticate %q), want 401 naming the missing token", path, code, body, header.Get("WWW-Authenticate"))
		}
	}
	// A ServiceAccount without the grant: 403, naming the ClusterRole to bind.
	code, body, _ := p.scrape(t, "/metrics", nobody)
	if code != http.StatusForbidden || !strings.Contains(body, "system:serviceaccount:"+ns+":nobody may not get /metrics") ||
		!strings.Contains(body, "secure-helm-drift-scraper") {
		t.Errorf("/metrics with a token without the grant: %d %q, want 403 naming the user and the ClusterRole", code, body)
	}

	// 100 scrapes of the bound ServiceAccount within the TTL: one review of each kind.
	tr, sar := counter.tokenReviews.Load(), counter.accessReviews.Load()
	start := time.Now()
	var metricsText string
	for i := range 100 {
		code, body, _ := p.scrape(t, "/metrics", prom)
		if code != http.StatusOK {
			t.Fatalf("scrape %d with the scraper's token: %d %s\n%s", i, code, body, p.log())
		}
		metricsText = body
	}
	took := time.Since(start)
	if took >= ttl {
		t.Fatalf("100 scrapes took %v, not within the cache's TTL (%v): the count below would not be of one TTL", took, ttl)
	}
	if d1, d2 := counter.tokenReviews.Load()-tr, counter.accessReviews.Load()-sar; d1 != 1 || d2 != 1 {
		t.Errorf("100 scrapes within the TTL made %d TokenReviews and %d SubjectAccessReviews, want 1 and 1", d1, d2)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := parser.TextToMetricFamilies(strings.NewReader(metricsText))
	if err != nil {
		t.Fatalf("the authorised scrape is not the Prometheus text format: %v", err)
	}
	if v, ok := sample(mf, "helm_drift_compared_fields", map[string]string{"namespace": ns, "release": "secure", "kind": "release"}); !ok || v == 0 {
		t.Errorf("the authorised scrape does not measure the chart's own release:\n%s", metricsText)
	}
	if code, body, _ := p.scrape(t, "/report", prom); code != http.StatusOK || !strings.Contains(body, `"releases"`) {
		t.Errorf("/report with the scraper's token: %d %.200s", code, body)
	}

	// A ServiceAccount token of another API server (same issuer, another signing key): 401.
	if env := <-other; env != nil {
		other <- env
		foreign := saToken(t, env.Kube, "default", "prom")
		code, body, _ := p.scrape(t, "/metrics", foreign)
		if code != http.StatusUnauthorized || !strings.Contains(body, "did not accept the bearer token") {
			t.Errorf("/metrics with another cluster's token: %d %q, want 401", code, body)
		}
	}

	// No refusal, body or log, echoes a token.
	for _, tok := range []string{prom, nobody, own.Status.Token} {
		if strings.Contains(p.log(), tok) {
			t.Errorf("the log holds a bearer token")
		}
	}

	// The binding revoked: refused within one TTL (the cached answer lives at most that long).
	if err := kc.RbacV1().ClusterRoleBindings().Delete(ctx, "secure-helm-drift-scraper", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	for {
		code, _, _ := p.scrape(t, "/metrics", prom)
		if code == http.StatusForbidden {
			break
		}
		if time.Since(revoked) > ttl+3*time.Second {
			t.Fatalf("the revoked binding still scrapes %v after the revocation (TTL %v)", time.Since(revoked), ttl)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !strings.Contains(p.log(), `"msg":"request refused"`) {
		t.Errorf("no log line for a refused request:\n%s", p.log())
	}

	// A certificate from files, replaced while serving.
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca1 := writeServingCert(t, certFile, keyFile)
	files := startServe(t, tokenKubeconfig(t, front.URL, own.Status.Token), "--namespaces="+ns, "--tls-cert-file="+certFile, "--tls-key-file="+keyFile)
	files.client = verifyingClient(ca1)
	testenv.Eventually(t, 30*time.Second, "/healthz over the files' certificate", func() (bool, string) {
		code, body, _ := tryScrape(files, "/healthz")
		return code == http.StatusOK, fmt.Sprintf("%d %s\n%s", code, body, files.log())
	})
	ca2 := writeServingCert(t, certFile, keyFile)
	pid := files.cmd.Process.Pid
	testenv.Eventually(t, 30*time.Second, "the replaced certificate served", func() (bool, string) {
		c := servedChain(t, files.url)[0]
		return c.CheckSignatureFrom(ca2) == nil, "still the first certificate"
	})
	files.client = verifyingClient(ca2)
	if code, body, _ := files.scrape(t, "/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz over the replaced certificate: %d %s", code, body)
	}
	if files.cmd.ProcessState != nil || files.cmd.Process.Pid != pid {
		t.Errorf("serve restarted to serve the new certificate")
	}
}

// tryScrape is scrape without failing the test on a transport error.
func tryScrape(p *serveProcess, path string) (int, string, error) {
	res, err := p.client.Get(p.url + path)
	if err != nil {
		return 0, err.Error(), err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), nil
}

// writeServingCert writes a new CA's certificate for 127.0.0.1 and localhost to certFile and
// keyFile (each replaced by a rename, as the kubelet swaps a mounted Secret), and returns the
// CA.
func writeServingCert(t *testing.T, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano() + 1), Subject: pkix.Name{CommonName: "helm-drift"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	for path, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	return ca
}

// TestServeNamespaces: the chart confined to two namespaces (serve.namespaces: a Role and a
// RoleBinding in each, no ClusterRole to read with) and serve run under its ServiceAccount with
// --namespaces naming them and a third it may not read: the releases of both are measured at 0;
// a release's cluster-scoped object is reported unmeasured (the only read refused for lack of
// a cluster-wide grant); the third namespace is one line in the log and a measurement_failed
// series, its release absent from the metrics; the run succeeds.
func TestServeNamespaces(t *testing.T) {
	t.Parallel() // its own namespaces, Helm homes and process
	h := clusterHelm(t, "helm4")
	home := cluster.Namespace(t)
	a, b, c := home+"-a", home+"-b", home+"-c"
	ctx := context.Background()
	for _, ns := range []string{a, b, c} {
		if _, err := cluster.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cluster.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
		h.run(t, false, nil, "install", "web", "testdata/charts/webapp", "-n", ns, "--set", "headless=true")
	}
	// A release in a that holds a cluster-scoped object beside a namespaced one.
	chart := filepath.Join(t.TempDir(), "scoped")
	for path, text := range map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: scoped\nversion: 1.0.0\n",
		"templates/all.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: scoped}\ndata: {a: b}\n---\n" +
			"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: {{ .Release.Namespace }}-scoped}\nrules: []\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(chart, path)), 0o755)
		if err := os.WriteFile(filepath.Join(chart, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.run(t, false, nil, "install", "scoped", chart, "-n", a)
	t.Cleanup(func() { h.run(t, false, nil, "uninstall", "scoped", "-n", a) })

	h.run(t, false, nil, "install", "confined", "charts/helm-drift", "-n", home, "--set", "serve.namespaces={"+a+","+b+"}")
	t.Cleanup(func() { h.run(t, false, nil, "uninstall", "confined", "-n", home) })
	if _, err := cluster.Kube.RbacV1().ClusterRoles().Get(ctx, "confined-helm-drift", metav1.GetOptions{}); err == nil {
		t.Errorf("serve.namespaces: the chart still makes the reading ClusterRole")
	}
	for _, ns := range []string{a, b} {
		if _, err := cluster.Kube.RbacV1().RoleBindings(ns).Get(ctx, "confined-helm-drift", metav1.GetOptions{}); err != nil {
			t.Errorf("serve.namespaces: no RoleBinding in %s: %v", ns, err)
		}
	}
	tok, err := cluster.Kube.CoreV1().ServiceAccounts(home).CreateToken(ctx, "confined-helm-drift", &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counter := &reviewCounter{}
	p := startServe(t, tokenKubeconfig(t, counter.front(t).URL, tok.Status.Token), "--auth=none", "--tls=false", "--namespaces="+a+","+b+","+c)
	testenv.Eventually(t, 60*time.Second, "a successful run", func() (bool, string) {
		code, body := p.get("/readyz")
		return code == http.StatusOK, fmt.Sprintf("%d %s\n%s", code, body, p.log())
	})
	mf := servedMetrics(t, p.url)
	for _, ns := range []string{a, b} {
		web := map[string]string{"namespace": ns, "release": "web", "kind": "release"}
		if v, ok := sample(mf, "helm_drift_compared_fields", web); !ok || v == 0 {
			t.Errorf("%s/web not measured with the namespace's Role\n%s", ns, p.log())
		}
		for _, class := range []string{"DIFFERS", "CHART-ONLY", "CLUSTER-ONLY", "SHADOWS"} {
			if v, _ := sample(mf, "helm_drift_divergences", map[string]string{"namespace": ns, "release": "web", "kind": "release", "class": class}); v != 0 {
				t.Errorf("%s/web: %s = %v, want 0", ns, class, v)
			}
		}
		if v, _ := sample(mf, "helm_drift_unmeasured_objects", web); v != 0 {
			t.Errorf("%s/web: %v objects unmeasured with the namespace's Role\n%s", ns, v, p.log())
		}
	}
	if v, ok := sample(mf, "helm_drift_unmeasured_objects", map[string]string{"namespace": a, "release": "scoped", "kind": "release"}); !ok || v != 1 {
		t.Errorf("%s/scoped: unmeasured objects %v (present %v), want 1: its ClusterRole, which no Role lets serve read", a, v, ok)
	}
	if v, ok := sample(mf, "helm_drift_measurement_failed", map[string]string{"namespace": c, "kind": "release"}); !ok || v != 1 {
		t.Errorf("%s, which serve may not read: measurement_failed %v (present %v), want 1", c, v, ok)
	}
	if _, ok := sample(mf, "helm_drift_compared_fields", map[string]string{"namespace": c, "release": "web"}); ok {
		t.Errorf("%s/web is in the metrics, though serve may not read %s", c, c)
	}
	if v, _ := sample(mf, "helm_drift_runs_total", map[string]string{"result": "failed"}); v != 0 {
		t.Errorf("a namespace serve may not read failed the run:\n%s", p.log())
	}
	log := p.log()
	if n := strings.Count(log, `"msg":"namespace not measured: its Helm releases could not be listed","namespace":"`+c+`"`); n == 0 {
		t.Errorf("no log line says %s could not be read:\n%s", c, log)
	}
	if !strings.Contains(log, `"msg":"object not measured","object":"`+a+`/scoped: ClusterRole.rbac.authorization.k8s.io `+a+`-scoped: forbidden: needs list on clusterroles`) {
		t.Errorf("no log line says which object of %s/scoped was not measured and why:\n%s", a, log)
	}
	if !strings.Contains(log, "refused (403)") {
		t.Errorf("the run's request count does not count the refused reads:\n%s", log)
	}
	// Every read the API server refused is of the namespace serve may not read, or of the
	// release's cluster-scoped object: none for lack of a cluster-wide grant otherwise.
	refused := counter.refusals()
	if len(refused) == 0 {
		t.Fatalf("no read was refused: the test does not test the grants")
	}
	for _, r := range refused {
		if !strings.Contains(r, "/namespaces/"+c+"/") && !strings.Contains(r, "/clusterroles") {
			t.Errorf("a read refused for lack of a cluster-wide grant: %s", r)
		}
	}
}
