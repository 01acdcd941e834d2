package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// apiServer is a small stand-in for the API server: discovery of ConfigMaps, Secrets,
// Namespaces and a custom kind, two pages of ConfigMaps, one Secret whose LIST is forbidden,
// and a record of every request.
type apiServer struct {
	mu       sync.Mutex
	requests []string
	// crdListForbidden: the user may get CustomResourceDefinitions, not list them.
	crdListForbidden bool
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	s.mu.Unlock()
	write := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	status := func(code int, reason, msg string) {
		write(code, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": msg, "code": code})
	}
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "apps", "labels": map[string]any{"app": name}}, "data": map[string]any{"k": "v"}}
	}
	partial := r.Header.Get("Accept") != "" && strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList")
	switch p := r.URL.Path; {
	case p == "/version":
		write(200, map[string]any{"major": "1", "minor": "34", "gitVersion": "v1.34.2"})
	case p == "/api":
		write(200, map[string]any{"kind": "APIVersions", "versions": []string{"v1"}})
	case p == "/apis":
		write(200, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{map[string]any{
			"name": "example.com", "versions": []any{map[string]any{"groupVersion": "example.com/v1", "version": "v1"}},
			"preferredVersion": map[string]any{"groupVersion": "example.com/v1", "version": "v1"}},
			map[string]any{"name": "apiextensions.k8s.io", "versions": []any{map[string]any{"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"}},
				"preferredVersion": map[string]any{"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"}}}})
	case p == "/apis/apiextensions.k8s.io/v1":
		write(200, map[string]any{"kind": "APIResourceList", "groupVersion": "apiextensions.k8s.io/v1", "resources": []any{
			map[string]any{"name": "customresourcedefinitions", "singularName": "customresourcedefinition", "namespaced": false, "kind": "CustomResourceDefinition", "verbs": []string{"get", "list"}},
		}})
	case p == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions":
		if s.crdListForbidden {
			status(403, "Forbidden", `customresourcedefinitions.apiextensions.k8s.io is forbidden: User "dev" cannot list resource "customresourcedefinitions"`)
			return
		}
		var items []any
		if r.URL.Query().Get("fieldSelector") == "metadata.name=widgets.example.com" {
			items = append(items, widgetCRD())
		}
		write(200, map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinitionList", "metadata": map[string]any{}, "items": items})
	case p == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com":
		write(200, widgetCRD())
	case p == "/api/v1":
		write(200, map[string]any{"kind": "APIResourceList", "groupVersion": "v1", "resources": []any{
			map[string]any{"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap", "verbs": []string{"get", "list", "create"}},
			map[string]any{"name": "secrets", "singularName": "secret", "namespaced": true, "kind": "Secret", "verbs": []string{"get", "list"}},
			map[string]any{"name": "namespaces", "singularName": "namespace", "namespaced": false, "kind": "Namespace", "verbs": []string{"get", "list"}},
		}})
	case p == "/apis/example.com/v1":
		write(200, map[string]any{"kind": "APIResourceList", "groupVersion": "example.com/v1", "resources": []any{
			map[string]any{"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget", "verbs": []string{"get", "list"}},
		}})
	case p == "/api/v1/namespaces/apps/configmaps" && r.Method == http.MethodPost:
		if r.URL.Query().Get("dryRun") != "All" {
			status(400, "BadRequest", "this test server takes dry-run creates only")
			return
		}
		var obj map[string]any
		_ = json.NewDecoder(r.Body).Decode(&obj)
		obj["metadata"].(map[string]any)["uid"] = "dry-run-uid"
		write(201, obj)
	case p == "/api/v1/namespaces/apps/configmaps":
		items, next := []any{cm("a"), cm("b")}, "page-2"
		if r.URL.Query().Get("continue") == "page-2" {
			items, next = []any{cm("c")}, ""
		}
		kind := "ConfigMapList"
		if partial {
			kind = "PartialObjectMetadataList"
			for i, it := range items {
				items[i] = map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": it.(map[string]any)["metadata"]}
			}
			write(200, map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": kind, "metadata": map[string]any{"continue": next}, "items": items})
			return
		}
		write(200, map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"continue": next}, "items": items})
	case p == "/api/v1/namespaces/apps/configmaps/a":
		write(200, cm("a"))
	case strings.HasPrefix(p, "/api/v1/namespaces/apps/configmaps/"):
		status(404, "NotFound", fmt.Sprintf("configmaps %q not found", p[strings.LastIndex(p, "/")+1:]))
	case p == "/api/v1/namespaces/apps/secrets":
		status(403, "Forbidden", `secrets is forbidden: User "dev" cannot list resource "secrets" in API group "" in the namespace "apps"`)
	default:
		status(404, "NotFound", "the test server does not serve "+p)
	}
}

func widgetCRD() map[string]any {
	return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"}, "spec": map[string]any{"group": "example.com"}}
}

func newClient(t *testing.T) (*Client, *apiServer) {
	t.Helper()
	return newClientOf(t, &apiServer{})
}

func newClientOf(t *testing.T, s *apiServer) (*Client, *apiServer) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cl, err := NewForConfig(context.Background(), &rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return cl, s
}

func TestScopes(t *testing.T) {
	cl, _ := newClient(t)
	for _, tc := range []struct {
		group, kind string
		namespaced  bool
		err         error
	}{
		{"", "ConfigMap", true, nil},
		{"", "Namespace", false, nil},
		{"example.com", "Widget", true, nil},
		{"example.com", "Gadget", false, ErrNotServed},
	} {
		got, err := cl.Namespaced(tc.group, "v1", tc.kind)
		if !errors.Is(err, tc.err) || got != tc.namespaced {
			t.Errorf("Namespaced(%s, %s) = %v, %v; want %v, %v", tc.group, tc.kind, got, err, tc.namespaced, tc.err)
		}
	}
	if res, err := cl.Resource("example.com", "v1", "Widget"); err != nil || res != "widgets.example.com" {
		t.Errorf("Resource(Widget) = %q, %v; want widgets.example.com, as RBAC names it", res, err)
	}
	if cl.ServerVersion() != "v1.34.2" {
		t.Errorf("ServerVersion() = %q", cl.ServerVersion())
	}
}

// TestListsArePagedAndCounted: one LIST call per page, each counted as a LIST; metadata only.
func TestListsArePagedAndCounted(t *testing.T) {
	cl, s := newClient(t)
	before := cl.Counts.Lists()
	metas, err := cl.List(context.Background(), "", "v1", "ConfigMap", "apps")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range metas {
		names = append(names, m.Name+"="+m.Labels["app"])
	}
	if got := strings.Join(names, ","); got != "a=a,b=b,c=c" {
		t.Errorf("List = %s; want both pages", got)
	}
	objs, err := cl.ListObjects(context.Background(), "", "v1", "ConfigMap", "apps")
	if err != nil || len(objs) != 3 || objs[0]["data"] == nil {
		t.Errorf("ListObjects = %d objects, %v; want 3 whole objects", len(objs), err)
	}
	if n := cl.Counts.Lists() - before; n != 4 {
		t.Errorf("%d LISTs counted; want 4 (two pages, twice)", n)
	}
	var limited int
	for _, r := range s.requests {
		if strings.Contains(r, "/configmaps?") && strings.Contains(r, "limit=500") {
			limited++
		}
	}
	if limited != 4 {
		t.Errorf("%d LISTs asked for pages of 500; want 4:\n%s", limited, strings.Join(s.requests, "\n"))
	}
}

func TestGetAndErrors(t *testing.T) {
	cl, _ := newClient(t)
	ctx := context.Background()
	if o, err := cl.Get(ctx, "", "v1", "ConfigMap", "apps", "a"); err != nil || o["data"] == nil {
		t.Errorf("Get(a) = %v, %v", o, err)
	}
	if _, err := cl.Get(ctx, "", "v1", "ConfigMap", "apps", "gone"); !apierrors.IsNotFound(err) {
		t.Errorf("Get(gone): %v; want NotFound", err)
	}
	if _, err := cl.ListObjects(ctx, "", "v1", "Secret", "apps"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "secrets") {
		t.Errorf("ListObjects(Secret): %v; want Forbidden naming the resource", err)
	}
	if _, err := cl.ListObjects(ctx, "example.com", "v1", "Gadget", "apps"); !errors.Is(err, ErrNotServed) {
		t.Errorf("ListObjects(Gadget): %v; want ErrNotServed", err)
	}
}

// TestCRDsListedByName: a CustomResourceDefinition is read with a LIST of its one name (the API
// server answers it from its watch cache; a GET reads etcd), NotFound when it holds none, and
// with a GET where the LIST is forbidden, from then on.
func TestCRDsListedByName(t *testing.T) {
	ctx := context.Background()
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	cl, s := newClient(t)
	before := cl.Counts.Lists()
	obj, err := cl.Get(ctx, "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "", "widgets.example.com")
	if err != nil || obj["spec"] == nil {
		t.Fatalf("Get(widgets.example.com) = %v, %v; want the CRD", obj, err)
	}
	last := s.requests[len(s.requests)-1]
	if last != "GET "+crds+"?fieldSelector=metadata.name%3Dwidgets.example.com" {
		t.Errorf("request %q: want a LIST of the one name", last)
	}
	if n := cl.Counts.Lists() - before; n != 1 {
		t.Errorf("%d LISTs counted; want 1", n)
	}
	_, err = cl.Get(ctx, "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "", "gadgets.example.com")
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `customresourcedefinitions.apiextensions.k8s.io "gadgets.example.com" not found`) {
		t.Errorf("Get(gadgets.example.com): %v; want NotFound naming it, as a GET's", err)
	}

	cl, s = newClientOf(t, &apiServer{crdListForbidden: true})
	for range 2 {
		if obj, err := cl.Get(ctx, "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "", "widgets.example.com"); err != nil || obj["spec"] == nil {
			t.Fatalf("Get(widgets.example.com), list forbidden = %v, %v; want the CRD by a GET", obj, err)
		}
	}
	var lists, gets int
	for _, r := range s.requests {
		switch {
		case strings.HasPrefix(r, "GET "+crds+"?"):
			lists++
		case strings.HasPrefix(r, "GET "+crds+"/widgets.example.com"):
			gets++
		}
	}
	if lists != 1 || gets != 2 {
		t.Errorf("list forbidden: %d LISTs, %d GETs; want the LIST tried once, then GETs:\n%s", lists, gets, strings.Join(s.requests, "\n"))
	}
}

// TestDryRunCreate: a dry-run create under the temporary name, never a real write.
func TestDryRunCreate(t *testing.T) {
	cl, s := newClient(t)
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "apps", "resourceVersion": "7"}}
	out, err := cl.DryRunCreate(context.Background(), obj, "helm-drift-tmp")
	if err != nil {
		t.Fatal(err)
	}
	md := out["metadata"].(map[string]any)
	if md["name"] != "helm-drift-tmp" || md["uid"] != "dry-run-uid" || md["resourceVersion"] != nil {
		t.Errorf("dry-run object metadata %v: want the temporary name, no resourceVersion", md)
	}
	if obj["metadata"].(map[string]any)["name"] != "a" {
		t.Error("DryRunCreate changed the caller's object")
	}
	last := s.requests[len(s.requests)-1]
	if !strings.HasPrefix(last, "POST ") || !strings.Contains(last, "dryRun=All") || !strings.Contains(last, "fieldManager=helm-drift") {
		t.Errorf("request %q: want a POST with dryRun=All", last)
	}
	if !strings.Contains(cl.Counts.String(), "1 dry-run create") {
		t.Errorf("counts %q: want the dry-run counted", cl.Counts)
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := NewForConfig(context.Background(), &rest.Config{Host: url})
	if err == nil || !strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), url) {
		t.Errorf("NewForConfig on a closed server: %v; want \"cluster %s unreachable\"", err, url)
	}
}

func TestCountsClassify(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/api", "discovery"}, {"GET", "/apis/apps/v1", "discovery"}, {"GET", "/version", "discovery"},
		{"GET", "/api/v1/namespaces/apps/configmaps", "LIST"}, {"GET", "/apis/apps/v1/deployments", "LIST"},
		{"GET", "/api/v1/namespaces/apps/configmaps/a", "GET"}, {"GET", "/api/v1/namespaces/apps", "GET"},
		{"POST", "/api/v1/namespaces/apps/configmaps", "dry-run create"}, {"PATCH", "/api/v1/namespaces/apps/configmaps/a", "other"},
		{"PATCH", "/api/v1/namespaces/apps/configmaps/a?dryRun=All", "dry-run apply"},
	} {
		c := &Counts{}
		r, _ := http.NewRequest(tc.method, "https://cluster"+tc.path, nil)
		c.count(r)
		if !strings.Contains(c.String(), "1 "+tc.want) {
			t.Errorf("%s %s counted as %s; want %s", tc.method, tc.path, c, tc.want)
		}
	}
}
