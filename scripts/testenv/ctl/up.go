package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// env is what up writes to DIR/env for scripts and tests (KEY=VALUE lines, shell-sourceable).
type env struct {
	dir, token, server, registry, events string
	pids                                 []proc
}

type proc struct {
	name string
	pid  int
	exe  string
}

func up(dir, bin string) error {
	start := time.Now()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "pids")); err == nil {
		return fmt.Errorf("%s already holds an environment (pids exists); run down first", dir)
	}
	for _, d := range []string{"logs", "etcd", "certs", "storage"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	e := &env{dir: dir}
	ok := false
	defer func() {
		if !ok {
			writePids(e)
			down(dir)
		}
	}()
	ports, err := freePorts(15)
	if err != nil {
		return err
	}
	apiPort, etcdClient, etcdPeer, regPort, storagePort := ports[0], ports[1], ports[2], ports[3], ports[4]
	scMetrics, scHealth, hcMetrics, hcHealth := ports[5], ports[6], ports[7], ports[8]
	ncEvents, ncReceiver, ncMetrics, ncHealth := ports[9], ports[10], ports[11], ports[12]
	kcMetrics, kcHealth := ports[13], ports[14]

	if err := writeServiceAccountKeys(dir); err != nil {
		return err
	}
	tok := make([]byte, 16)
	rand.Read(tok)
	e.token = hex.EncodeToString(tok)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(e.token+`,admin,admin-uid,"system:masters"`+"\n"), 0o600); err != nil {
		return err
	}
	e.server = "https://127.0.0.1:" + strconv.Itoa(apiPort)

	t0 := time.Now()
	if err := e.start("kube-apiserver", filepath.Join(bin, "kube-apiserver"), []string{
		"TESTENV_ETCD_DIR=" + filepath.Join(dir, "etcd"),
		"TESTENV_ETCD_CLIENT_PORT=" + strconv.Itoa(etcdClient),
		"TESTENV_ETCD_PEER_PORT=" + strconv.Itoa(etcdPeer),
	},
		"--etcd-servers=http://127.0.0.1:"+strconv.Itoa(etcdClient),
		"--secure-port="+strconv.Itoa(apiPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		// As kubeadm's static pod manifest runs it (cmd/kubeadm/app/phases/controlplane,
		// getAPIServerCommand), where a chart can tell the difference: privileged containers
		// allowed (CSI drivers, CNI plugins, node agents), kubeadm's Service range (charts that
		// pin a clusterIP such as 10.96.0.10), the Node authorizer and NodeRestriction beside the
		// default admission plugins (PodSecurity, LimitRanger, ResourceQuota, the webhooks and
		// admission policies, ...). ServiceAccount admission stays off: it refuses every Pod
		// whose namespace has no "default" ServiceAccount, and nothing here (no
		// controller-manager) creates one.
		"--allow-privileged=true",
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
	); err != nil {
		return err
	}
	if err := e.waitHTTP("kube-apiserver", e.server+"/readyz", 90*time.Second); err != nil {
		return err
	}
	apiReady := time.Since(t0)
	if err := e.writeKubeconfig(); err != nil {
		return err
	}

	t1 := time.Now()
	if err := e.applyCRDs(filepath.Join(bin, "crds")); err != nil {
		return err
	}
	if err := e.createNamespace("flux-system"); err != nil {
		return err
	}
	crdsReady := time.Since(t1)

	regConfig := filepath.Join(dir, "registry.yml")
	if err := os.WriteFile(regConfig, []byte(fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  inmemory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:%d\n", regPort)), 0o644); err != nil {
		return err
	}
	e.registry = "127.0.0.1:" + strconv.Itoa(regPort)
	if err := e.start("registry", filepath.Join(bin, "registry"), nil, "serve", regConfig); err != nil {
		return err
	}
	kubeEnv := []string{"KUBECONFIG=" + filepath.Join(dir, "kubeconfig"), "RUNTIME_NAMESPACE=flux-system"}
	storage := "127.0.0.1:" + strconv.Itoa(storagePort)
	if err := e.start("source-controller", filepath.Join(bin, "source-controller"), kubeEnv,
		"--enable-leader-election=false", "--watch-all-namespaces", "--log-level=debug",
		"--metrics-addr=127.0.0.1:"+strconv.Itoa(scMetrics), "--health-addr=127.0.0.1:"+strconv.Itoa(scHealth),
		"--storage-path="+filepath.Join(dir, "storage"), "--storage-addr="+storage, "--storage-adv-addr="+storage,
	); err != nil {
		return err
	}
	if err := e.start("helm-controller", filepath.Join(bin, "helm-controller"), kubeEnv,
		"--enable-leader-election=false", "--watch-all-namespaces", "--log-level=debug",
		"--metrics-addr=127.0.0.1:"+strconv.Itoa(hcMetrics), "--health-addr=127.0.0.1:"+strconv.Itoa(hcHealth),
	); err != nil {
		return err
	}
	// kustomize-controller: builds and applies Kustomizations from source-controller's artifacts
	// (diff tree's e2e test reconciles a Git repository with it), as its Deployment runs it.
	if err := e.start("kustomize-controller", filepath.Join(bin, "kustomize-controller"), kubeEnv,
		"--enable-leader-election=false", "--watch-all-namespaces", "--log-level=debug",
		"--metrics-addr=127.0.0.1:"+strconv.Itoa(kcMetrics), "--health-addr=127.0.0.1:"+strconv.Itoa(kcHealth),
	); err != nil {
		return err
	}
	// notification-controller: its event endpoint is where serve --notify-flux posts (as the
	// Flux controllers post theirs); the controllers here post none (no --events-addr), so every
	// event its Alerts forward is one of ours.
	e.events = "http://127.0.0.1:" + strconv.Itoa(ncEvents)
	if err := e.start("notification-controller", filepath.Join(bin, "notification-controller"), kubeEnv,
		"--enable-leader-election=false", "--watch-all-namespaces", "--log-level=debug",
		"--events-addr=127.0.0.1:"+strconv.Itoa(ncEvents), "--receiverAddr=127.0.0.1:"+strconv.Itoa(ncReceiver),
		"--metrics-addr=127.0.0.1:"+strconv.Itoa(ncMetrics), "--health-addr=127.0.0.1:"+strconv.Itoa(ncHealth),
	); err != nil {
		return err
	}
	if err := writePids(e); err != nil {
		return err
	}
	for name, url := range map[string]string{
		"registry":                "http://" + e.registry + "/v2/",
		"source-controller":       "http://127.0.0.1:" + strconv.Itoa(scHealth) + "/readyz",
		"helm-controller":         "http://127.0.0.1:" + strconv.Itoa(hcHealth) + "/readyz",
		"kustomize-controller":    "http://127.0.0.1:" + strconv.Itoa(kcHealth) + "/readyz",
		"notification-controller": "http://127.0.0.1:" + strconv.Itoa(ncHealth) + "/readyz",
	} {
		if err := e.waitHTTP(name, url, 60*time.Second); err != nil {
			return err
		}
	}
	envText := fmt.Sprintf("KUBECONFIG=%s\nTESTENV_SERVER=%s\nTESTENV_TOKEN=%s\nTESTENV_REGISTRY=%s\nTESTENV_EVENTS=%s\nTESTENV_LOGS=%s\n",
		filepath.Join(dir, "kubeconfig"), e.server, e.token, e.registry, e.events, filepath.Join(dir, "logs"))
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte(envText), 0o600); err != nil {
		return err
	}
	ok = true
	fmt.Printf("testenv up in %.1fs (kube-apiserver ready in %.1fs, CRDs in %.1fs); %s\n",
		time.Since(start).Seconds(), apiReady.Seconds(), crdsReady.Seconds(), filepath.Join(dir, "env"))
	return nil
}

// freePorts asks the kernel for n free loopback ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func writeServiceAccountKeys(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// start runs a process in its own session (it outlives up), logging to DIR/logs/NAME.log.
func (e *env) start(name, exe string, extraEnv []string, args ...string) error {
	exe, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return fmt.Errorf("%s: %w (run scripts/testenv/build.sh)", name, err)
	}
	log, err := os.OpenFile(filepath.Join(e.dir, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	e.pids = append(e.pids, proc{name: name, pid: cmd.Process.Pid, exe: exe})
	go cmd.Wait() // reap it if it dies while up is still running
	return nil
}

func writePids(e *env) error {
	var b strings.Builder
	for _, p := range e.pids {
		fmt.Fprintf(&b, "%s %d %s\n", p.name, p.pid, p.exe)
	}
	return os.WriteFile(filepath.Join(e.dir, "pids"), []byte(b.String()), 0o644)
}

func (e *env) client() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

// do sends a request to the API server with the admin token.
func (e *env) do(method, path, contentType string, body []byte) ([]byte, int, error) {
	req, err := http.NewRequest(method, e.server+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.client().Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return data, resp.StatusCode, err
}

// waitHTTP polls url until it answers 200, or the process behind it exits, or timeout.
func (e *env) waitHTTP(name, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if strings.HasPrefix(url, e.server) {
			req.Header.Set("Authorization", "Bearer "+e.token)
		}
		resp, err := e.client().Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		for _, p := range e.pids {
			if p.name == name && !alive(p.pid) {
				return fmt.Errorf("%s exited while starting; its log:\n%s", name, tail(filepath.Join(e.dir, "logs", name+".log"), 30))
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %s (%s); its log:\n%s", name, timeout, last, tail(filepath.Join(e.dir, "logs", name+".log"), 30))
}

func (e *env) writeKubeconfig() error {
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: testenv
  context:
    cluster: testenv
    user: admin
current-context: testenv
`, e.server, e.token)
	return os.WriteFile(filepath.Join(e.dir, "kubeconfig"), []byte(kc), 0o600)
}

var crdName = regexp.MustCompile(`(?m)^metadata:\n(?:  .*\n)*?  name: (\S+)`)

// applyCRDs server-side applies every CRD file (the API server reads YAML) and waits until each
// is Established.
func (e *env) applyCRDs(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s (run scripts/testenv/build.sh)", dir)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		m := crdName.FindSubmatch(data)
		if m == nil {
			return fmt.Errorf("%s: no metadata.name", f)
		}
		name := string(m[1])
		body, code, err := e.do(http.MethodPatch, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name+"?fieldManager=testenv&force=true", "application/apply-patch+yaml", data)
		if err != nil {
			return fmt.Errorf("apply CRD %s: %w", name, err)
		}
		if code/100 != 2 {
			return fmt.Errorf("apply CRD %s: HTTP %d: %s", name, code, body)
		}
		names = append(names, name)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range names {
		for {
			body, _, err := e.do(http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name, "", nil)
			if err == nil && established(body) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not Established after 30s", name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func established(body []byte) bool {
	var crd struct {
		Status struct {
			Conditions []struct{ Type, Status string }
		}
	}
	if json.Unmarshal(body, &crd) != nil {
		return false
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == "Established" && c.Status == "True" {
			return true
		}
	}
	return false
}

func (e *env) createNamespace(name string) error {
	body, code, err := e.do(http.MethodPost, "/api/v1/namespaces", "application/json", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+name+`"}}`))
	if err != nil {
		return err
	}
	if code/100 != 2 && code != http.StatusConflict {
		return fmt.Errorf("create namespace %s: HTTP %d: %s", name, code, body)
	}
	return nil
}
