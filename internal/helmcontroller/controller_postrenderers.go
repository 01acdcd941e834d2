package helmcontroller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	v2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/opencontainers/go-digest"
	postrenderer4 "helm.sh/helm/v4/pkg/postrenderer"
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// PostRenderer is the chain helm-controller runs over the chart's output, in its order: each
// spec.postRenderers[].kustomize (patches and images, through kustomize's krusty API), then
// spec.commonMetadata, then the origin labels helm.toolkit.fluxcd.io/name and /namespace
// (last, so that they win over a common label of the same key).
// xref: helm-controller internal/postrender/build.go BuildPostRenderers.
func PostRenderer(hr *v2.HelmRelease) postrenderer4.PostRenderer {
	var chain combined
	for _, r := range hr.Spec.PostRenderers {
		if r.Kustomize != nil {
			chain = append(chain, &kustomizeRenderer{patches: r.Kustomize.Patches, images: r.Kustomize.Images})
		}
	}
	if cm := hr.Spec.CommonMetadata; cm != nil && (cm.Labels != nil || cm.Annotations != nil) {
		chain = append(chain, metadataRenderer{labels: cm.Labels, annotations: cm.Annotations})
	}
	chain = append(chain, metadataRenderer{labels: map[string]string{
		v2.GroupVersion.Group + "/name":      hr.Name,
		v2.GroupVersion.Group + "/namespace": hr.Namespace,
	}})
	return chain
}

// PostRenderersDigest and CommonMetadataDigest are the digests helm-controller records in
// status.observedPostRenderersDigest and observedCommonMetadataDigest ("" for none).
// xref: helm-controller internal/postrender/build.go Digest, CommonMetadataDigest.
func PostRenderersDigest(hr *v2.HelmRelease) string {
	if hr.Spec.PostRenderers == nil {
		return ""
	}
	return jsonDigest(hr.Spec.PostRenderers)
}

// CommonMetadataDigest: see PostRenderersDigest.
func CommonMetadataDigest(hr *v2.HelmRelease) string {
	if hr.Spec.CommonMetadata == nil {
		return ""
	}
	return jsonDigest(hr.Spec.CommonMetadata)
}

func jsonDigest(v any) string {
	d := digest.Canonical.Digester()
	if err := json.NewEncoder(d.Hash()).Encode(v); err != nil {
		return ""
	}
	return d.Digest().String()
}

// combined runs post-renderers in order.
type combined []postrenderer4.PostRenderer

// Run implements postrenderer.PostRenderer.
func (c combined) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out := in
	for _, r := range c {
		var err error
		if out, err = r.Run(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// kustomizeRenderer builds a kustomization whose only resource is the chart's output.
// xref: helm-controller internal/postrender/kustomize.go.
type kustomizeRenderer struct {
	patches []kustomize.Patch
	images  []kustomize.Image
}

// kustomizeMu: helm-controller serialises krusty builds (kubernetes-sigs/kustomize#3659).
var kustomizeMu sync.Mutex

// Run implements postrenderer.PostRenderer.
func (k *kustomizeRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	fs := filesys.MakeFsInMemory()
	cfg := kustypes.Kustomization{}
	cfg.APIVersion, cfg.Kind = kustypes.KustomizationVersion, kustypes.KustomizationKind
	for _, im := range k.images {
		cfg.Images = append(cfg.Images, kustypes.Image{Name: im.Name, NewName: im.NewName, NewTag: im.NewTag, Digest: im.Digest})
	}
	const input = "helm-output.yaml"
	cfg.Resources = append(cfg.Resources, input)
	if err := fs.WriteFile(input, in.Bytes()); err != nil {
		return nil, err
	}
	for _, p := range k.patches {
		kp := kustypes.Patch{Patch: p.Patch}
		if s := p.Target; s != nil {
			kp.Target = &kustypes.Selector{LabelSelector: s.LabelSelector, AnnotationSelector: s.AnnotationSelector}
			kp.Target.Gvk.Group, kp.Target.Gvk.Version, kp.Target.Gvk.Kind = s.Group, s.Version, s.Kind
			kp.Target.Name, kp.Target.Namespace = s.Name, s.Namespace
		}
		cfg.Patches = append(cfg.Patches, kp)
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if err := fs.WriteFile("kustomization.yaml", data); err != nil {
		return nil, err
	}
	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	m, err := krusty.MakeKustomizer(&krusty.Options{LoadRestrictions: kustypes.LoadRestrictionsNone, PluginConfig: kustypes.DisabledPluginConfig()}).Run(fs, ".")
	if err != nil {
		return nil, fmt.Errorf("spec.postRenderers kustomize: %w", err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(out), nil
}

// metadataRenderer sets labels and annotations on every object, as helm-controller's
// CommonRenderer and OriginLabels do with kustomize's builtin transformers.
// xref: helm-controller internal/postrender/common_renderer.go, transformer.go.
type metadataRenderer struct {
	labels, annotations map[string]string
}

// Run implements postrenderer.PostRenderer.
func (r metadataRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	m, err := resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory()).NewResMapFromBytes(in.Bytes())
	if err != nil {
		return nil, err
	}
	if r.labels != nil {
		t := &builtins.LabelTransformerPlugin{Labels: r.labels, FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}}}
		if err := t.Transform(m); err != nil {
			return nil, err
		}
	}
	if r.annotations != nil {
		t := &builtins.AnnotationsTransformerPlugin{Annotations: r.annotations, FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/annotations", CreateIfNotPresent: true}}}
		if err := t.Transform(m); err != nil {
			return nil, err
		}
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(out), nil
}
