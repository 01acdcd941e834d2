package kubeapis

import (
	"slices"
	"strings"
	"testing"

	chartutil3 "helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v4/pkg/chart/common"
)

// TestServed: what an API server serves by default at a release, from Kubernetes' own API
// lifecycle: generally available versions from their introduction on, beta versions
// introduced before 1.24 until their removal, alpha versions never.
func TestServed(t *testing.T) {
	for _, tc := range []struct {
		version     Version
		want, lacks []string
	}{
		{Version{1, 34},
			[]string{"v1", "v1/ConfigMap", "apps/v1/Deployment", "policy/v1", "policy/v1/PodDisruptionBudget", "batch/v1/CronJob",
				"autoscaling/v2", "networking.k8s.io/v1/Ingress", "resource.k8s.io/v1", "apiextensions.k8s.io/v1/CustomResourceDefinition",
				"apiregistration.k8s.io/v1/APIService", "v1/PodExecOptions"},
			[]string{"policy/v1beta1", "batch/v1beta1", "batch/v1beta1/CronJob", "extensions/v1beta1", "apiextensions.k8s.io/v1beta1",
				"flowcontrol.apiserver.k8s.io/v1beta3", "admissionregistration.k8s.io/v1beta1",
				// introduced after 1.34
				"storagemigration.k8s.io/v1", "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"}},
		{Version{1, 24},
			[]string{"policy/v1beta1", "policy/v1beta1/PodDisruptionBudget", "batch/v1beta1/CronJob", "policy/v1", "autoscaling/v2"},
			// removed in 1.22; introduced in 1.34
			[]string{"extensions/v1beta1/Ingress", "networking.k8s.io/v1beta1/Ingress", "resource.k8s.io/v1"}},
		{Version{1, 25}, []string{"policy/v1"}, []string{"policy/v1beta1", "batch/v1beta1"}},
	} {
		served := Served(tc.version)
		for _, w := range tc.want {
			if !slices.Contains(served, w) {
				t.Errorf("%s: %s not served", tc.version, w)
			}
		}
		for _, l := range tc.lacks {
			if slices.Contains(served, l) {
				t.Errorf("%s: %s served", tc.version, l)
			}
		}
		for _, s := range served {
			if strings.Contains(s, "alpha") || strings.HasSuffix(s, "List") || strings.HasSuffix(s, "/DeleteOptions") || strings.HasSuffix(s, "/WatchEvent") {
				t.Errorf("%s: %s served", tc.version, s)
			}
		}
		if !slices.IsSorted(served) {
			t.Errorf("%s: not sorted", tc.version)
		}
	}
}

// TestBuiltin: Kubernetes' own groups, in either form, whatever the version.
func TestBuiltin(t *testing.T) {
	for in, want := range map[string]bool{
		"v1": true, "v1/Pod": true, "apps/v1": true, "policy/v1beta1": true, "batch/v1beta1/CronJob": true,
		"apiextensions.k8s.io/v1": true, "networking.k8s.io/v1/Ingress": true,
		"monitoring.coreos.com/v1": false, "monitoring.coreos.com/v1/ServiceMonitor": false, "security.openshift.io/v1": false, "": false,
	} {
		if got := Builtin(in); got != want {
			t.Errorf("Builtin(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestOffered: the release's versions, then those given, in a slice the Helm SDK's append
// copies; a version that is no release is refused.
func TestOffered(t *testing.T) {
	got, err := Offered("v1.34.2", []string{"monitoring.coreos.com/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if got[len(got)-1] != "monitoring.coreos.com/v1" || !slices.Contains(got, "apps/v1") || len(got) != cap(got) {
		t.Errorf("Offered: %d versions (cap %d), last %q", len(got), cap(got), got[len(got)-1])
	}
	for _, v := range []string{"1.33", "v1.33.4-gke.1245000"} {
		if _, err := Offered(v, nil); err != nil {
			t.Errorf("Offered(%q): %v", v, err)
		}
	}
	if def, err := Offered("", nil); err != nil || len(def) == 0 {
		t.Errorf("Offered at the SDK's default version: %d versions, %v", len(def), err)
	} else if at, _ := Offered(DefaultVersion4(), nil); !slices.Equal(def, at) {
		t.Errorf("Offered(\"\") is not Offered(%q)", DefaultVersion4())
	}
	if _, err := Offered("latest", nil); err == nil || !strings.Contains(err.Error(), "v1.34.2") {
		t.Errorf("Offered(latest): %v", err)
	}
}

// TestSDKDefaults: the Helm SDKs' renders with no cluster offer nothing of their own, only
// what they are given.
func TestSDKDefaults(t *testing.T) {
	if n := len(common.DefaultCapabilities.APIVersions); n != 0 {
		t.Errorf("Helm 4's default set holds %d versions", n)
	}
	if n := len(chartutil3.DefaultCapabilities.APIVersions); n != 0 {
		t.Errorf("Helm 3's default set holds %d versions", n)
	}
	if common.DefaultCapabilities.KubeVersion.Version == "" || DefaultVersion4() == "" {
		t.Error("Helm 4's default Kubernetes version lost")
	}
}

// TestCRDServes: a CRD's served versions, in both forms; an unserved version, a v1beta1 CRD's
// single version, and other objects.
func TestCRDServes(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want []string
	}{
		{"v1", map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "spec": map[string]any{
			"group": "example.com", "names": map[string]any{"kind": "Widget"},
			"versions": []any{map[string]any{"name": "v1", "served": true}, map[string]any{"name": "v0", "served": false}}}},
			[]string{"example.com/v1", "example.com/v1/Widget"}},
		{"v1beta1", map[string]any{"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition", "spec": map[string]any{
			"group": "example.com", "version": "v1alpha1", "names": map[string]any{"kind": "Widget"}}},
			[]string{"example.com/v1alpha1", "example.com/v1alpha1/Widget"}},
		{"another kind", map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}, nil},
		{"another group", map[string]any{"apiVersion": "example.com/v1", "kind": "CustomResourceDefinition"}, nil},
	} {
		if got := CRDServes(tc.obj); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
