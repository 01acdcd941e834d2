package action

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Self is the self-management lifecycle of a release rendered with "render --self": the
// hand-over to helm-controller (Resume), who writes it now (Status), and giving it back to the
// CLI (Handback) or removing it (Uninstall).
type Self struct {
	// Config is the cluster access of the run.
	Config *Configuration
	// Namespace is the release's.
	Namespace string
	// Timeout bounds each wait: for the release to be deployed (Resume), for the pair to be
	// gone and the guard lifted (Handback, Uninstall).
	Timeout time.Duration
	// Force resumes a failed release.
	Force bool
	// NoHooks uninstalls without running the release's hooks, as helm uninstall --no-hooks.
	NoHooks bool

	once    sync.Once
	c       *selfClients
	initErr error
}

// clients makes what the lifecycle talks to, once.
func (s *Self) clients() (*selfClients, error) {
	s.once.Do(func() {
		cfg, err := s.Config.Helm3(s.Namespace)
		if err != nil {
			s.initErr = err
			return
		}
		rc := s.Config.RESTConfig()
		kc, err := kubernetes.NewForConfig(rc)
		if err != nil {
			s.initErr = err
			return
		}
		dc, err := dynamic.NewForConfig(rc)
		if err != nil {
			s.initErr = err
			return
		}
		warnings := &guardWarnings{}
		prc := s.Config.RESTConfig()
		prc.WarningHandler = warnings
		pc, err := kubernetes.NewForConfig(prc)
		if err != nil {
			s.initErr = err
			return
		}
		s.c = &selfClients{helm: cfg, kube: kc, dynamic: dc, probe: pc, warnings: warnings}
	})
	return s.c, s.initErr
}

// waitGone waits until a deleted Flux object is gone (its controller removes its finalizer).
func (s *Self) waitGone(ctx context.Context, c *selfClients, gvr schema.GroupVersionResource, name, controller string) error {
	deadline := time.Now().Add(s.Timeout)
	for {
		if _, err := c.dynamic.Resource(gvr).Namespace(s.Namespace).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s/%s still present after %s (is %s running? it removes the finalizer)", gvr.Resource, s.Namespace, name, s.Timeout, controller)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// selfClients are what the self commands talk to.
type selfClients struct {
	helm    *action.Configuration
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	// probe asks whether the CLI guard is still enforced; its warnings are recorded, not
	// printed (the guard's warning binding answers a dry-run too).
	probe    kubernetes.Interface
	warnings *guardWarnings
}

// guardWarnings records whether the API server sent a warning from the admission policy named
// policy.
type guardWarnings struct {
	mu     sync.Mutex
	policy string
	seen   bool
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *guardWarnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.policy != "" && strings.Contains(text, "ValidatingAdmissionPolicy '"+w.policy+"'") {
		w.seen = true
	}
}

// take reports whether a policy warning came since the last call, and forgets it.
func (w *guardWarnings) take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := w.seen
	w.seen = false
	return seen
}
