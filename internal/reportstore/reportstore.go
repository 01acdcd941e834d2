// Package reportstore keeps serve's divergence history in the cluster as OpenReports Reports
// (openreports.io/v1alpha1, the format Policy Reporter and the other OpenReports consumers
// read): one Report per release or HelmRelease, in its namespace, a result per divergence
// (policy helm-drift, rule the object and field, result fail while open and pass once
// resolved, timestamp its first sighting, properties the class, who moved it and when, resolved
// at, returns). It writes a Report only when its content changes (a steady run writes none), bounds each
// one far below the API server's object size limit (what does not fit is counted in an
// annotation), and reads them back after a restart. It holds no value of any field.
package reportstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/helm-drift/helm-drift/internal/compare"
	"github.com/helm-drift/helm-drift/internal/history"
)

// Reports is the OpenReports Report resource.
var Reports = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "reports"}

// The labels and annotations of helm-drift's Reports.
const (
	managedBy     = "app.kubernetes.io/managed-by"
	managedByMe   = "helm-drift"
	kindLabel     = "helm-drift.io/kind"
	omittedAnnot  = "helm-drift.io/omitted-results"
	measuredAnnot = "helm-drift.io/measured"
	policy        = "helm-drift"
)

// MaxResults bounds the results of one Report: far below the API server's 1.5 MB object limit
// (a result is under 1 KB); the oldest resolved divergences are left out first, and counted.
const MaxResults = 800

// ErrNoCRD: the cluster does not serve the Report kind (its CRD is not installed).
var ErrNoCRD = errors.New("the OpenReports Report CRD (reports.openreports.io) is not installed")

// Store reads and writes the Reports through a dynamic client.
type Store struct {
	Client dynamic.Interface
	// Namespaces confine the reads to these namespaces (serve --namespaces); none: all.
	Namespaces []string

	mu      sync.Mutex
	written map[string]string // "namespace/name" to the digest of what was last written or read
}

// Name is the Report of a measurement ("kind/namespace/name"): namespace and name.
func Name(measured string) (namespace, name string) {
	kind, namespace, name := history.Split(measured)
	name = "helm-drift-" + kind + "-" + name
	if len(name) > 253 {
		sum := sha256.Sum256([]byte(name))
		name = name[:240] + "-" + hex.EncodeToString(sum[:6])
	}
	return namespace, name
}

// Load reads every helm-drift Report and returns the history they hold.
func (s *Store) Load(ctx context.Context) ([]history.Entry, error) {
	namespaces := s.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var out []history.Entry
	for _, ns := range namespaces {
		list, err := s.Client.Resource(Reports).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: managedBy + "=" + managedByMe})
		if err != nil {
			return nil, notServed(err)
		}
		for _, item := range list.Items {
			entries := entriesOf(item.Object)
			out = append(out, entries...)
			s.remember(item.GetNamespace()+"/"+item.GetName(), digestOf(item.Object))
		}
	}
	return out, nil
}

// Sync writes the Report of each measurement whose history changed since the last write:
// entries are every measurement's history (history.Entries), measured the measurements of the
// run. It returns how many Reports it wrote.
func (s *Store) Sync(ctx context.Context, measured []string, entries func(string) []history.Entry) (int, error) {
	written := 0
	var errs []error
	for _, m := range measured {
		obj := build(m, entries(m))
		ns, name := Name(m)
		key := ns + "/" + name
		d := digestOf(obj)
		if s.seen(key) == d {
			continue
		}
		if err := s.put(ctx, ns, name, obj); err != nil {
			if errors.Is(err, ErrNoCRD) {
				return written, err
			}
			errs = append(errs, fmt.Errorf("Report %s: %w", key, err))
			continue
		}
		s.remember(key, d)
		written++
	}
	return written, errors.Join(errs...)
}

// put creates or updates the Report ns/name with obj's content.
func (s *Store) put(ctx context.Context, ns, name string, obj map[string]any) error {
	rc := s.Client.Resource(Reports).Namespace(ns)
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	u.SetName(name)
	cur, err := rc.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = rc.Create(ctx, u, metav1.CreateOptions{FieldManager: managedByMe})
		return notServed(err)
	case err != nil:
		return notServed(err)
	}
	u.SetResourceVersion(cur.GetResourceVersion())
	_, err = rc.Update(ctx, u, metav1.UpdateOptions{FieldManager: managedByMe})
	return err
}

func (s *Store) seen(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written[key]
}

func (s *Store) remember(key, digest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = map[string]string{}
	}
	s.written[key] = digest
}

// notServed turns "the kind is not served" into ErrNoCRD.
func notServed(err error) error {
	var noKind *meta.NoKindMatchError
	var noResource *meta.NoResourceMatchError
	if errors.As(err, &noKind) || errors.As(err, &noResource) {
		return ErrNoCRD
	}
	if apierrors.IsNotFound(err) {
		if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil && status.Status().Details.Name == "" {
			return ErrNoCRD // a 404 for the collection itself: the resource is not served
		}
	}
	return err
}

// digestOf is the digest of a Report's content (labels, annotations, scope, summary,
// results), not of its server-set metadata.
func digestOf(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	parts := map[string]any{"labels": meta["labels"], "annotations": meta["annotations"], "scope": obj["scope"], "summary": obj["summary"], "results": obj["results"], "source": obj["source"]}
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// build is the Report of one measurement's history.
func build(measured string, entries []history.Entry) map[string]any {
	kind, ns, name := history.Split(measured)
	sort.SliceStable(entries, func(i, j int) bool {
		if entries[i].Open() != entries[j].Open() {
			return entries[i].Open()
		}
		return entries[i].LastSeen.After(entries[j].LastSeen)
	})
	omitted := 0
	if len(entries) > MaxResults {
		omitted, entries = len(entries)-MaxResults, entries[:MaxResults]
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.Object != b.Object {
			return a.Object < b.Object
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Class < b.Class
	})
	results := make([]any, 0, len(entries))
	pass, fail := 0, 0
	for _, e := range entries {
		result := "fail"
		if !e.Open() {
			result = "pass"
			pass++
		} else {
			fail++
		}
		// An open divergence's last sighting is the Report's last run, not kept: a steady run
		// then writes nothing.
		props := map[string]any{"measured": e.Measured, "object": e.Object, "path": e.Path, "class": string(e.Class),
			"firstSeen": stamp(e.FirstSeen), "returns": strconv.Itoa(e.Returns)}
		if !e.ResolvedAt.IsZero() {
			props["resolvedAt"], props["lastSeen"] = stamp(e.ResolvedAt), stamp(e.LastSeen)
		}
		if len(e.Managers) > 0 {
			props["movedBy"] = strings.Join(e.Managers, ",")
		}
		if !e.MovedAt.IsZero() {
			props["movedAt"] = stamp(e.MovedAt)
		}
		msg := fmt.Sprintf("%s %s: %s since %s", e.Object, e.Path, e.Class, stamp(e.FirstSeen))
		if !e.Open() {
			msg = fmt.Sprintf("%s %s: %s from %s, resolved at %s", e.Object, e.Path, e.Class, stamp(e.FirstSeen), stamp(e.ResolvedAt))
		}
		results = append(results, map[string]any{"source": policy, "policy": policy, "rule": e.Object + " " + e.Path,
			"category": string(e.Class), "severity": "medium", "result": result, "scored": true,
			"timestamp": map[string]any{"seconds": e.FirstSeen.Unix(), "nanos": int64(0)},
			"message":   msg, "properties": props})
	}
	annotations := map[string]any{measuredAnnot: measured}
	if omitted > 0 {
		annotations[omittedAnnot] = strconv.Itoa(omitted)
	}
	obj := map[string]any{
		"apiVersion": Reports.Group + "/" + Reports.Version, "kind": "Report",
		"metadata": map[string]any{"labels": map[string]any{managedBy: managedByMe, kindLabel: kind}, "annotations": annotations},
		"source":   policy,
		"summary":  map[string]any{"pass": int64(pass), "fail": int64(fail), "warn": int64(0), "error": int64(0), "skip": int64(0)},
		"results":  results,
	}
	if kind == "helmrelease" {
		obj["scope"] = map[string]any{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "namespace": ns, "name": name}
	}
	return obj
}

// entriesOf reads the history back from a Report's results.
func entriesOf(obj map[string]any) []history.Entry {
	results, _ := obj["results"].([]any)
	var out []history.Entry
	for _, r := range results {
		rm, _ := r.(map[string]any)
		if rm["policy"] != policy {
			continue
		}
		p, _ := rm["properties"].(map[string]any)
		str := func(k string) string { s, _ := p[k].(string); return s }
		at := func(k string) time.Time { t, _ := time.Parse(time.RFC3339, str(k)); return t }
		returns, _ := strconv.Atoi(str("returns"))
		e := history.Entry{Key: history.Key{Measured: str("measured"), Object: str("object"), Path: str("path"), Class: compare.Class(str("class"))},
			FirstSeen: at("firstSeen"), LastSeen: at("lastSeen"), ResolvedAt: at("resolvedAt"), Returns: returns, MovedAt: at("movedAt")}
		if e.LastSeen.IsZero() {
			e.LastSeen = e.FirstSeen // open: seen until the Report's last write, at least since then
		}
		if m := str("movedBy"); m != "" {
			e.Managers = strings.Split(m, ",")
		}
		if e.Measured == "" || e.FirstSeen.IsZero() {
			continue
		}
		out = append(out, e)
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
