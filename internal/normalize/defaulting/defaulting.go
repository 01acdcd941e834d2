package defaulting

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	baseversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	kjson "sigs.k8s.io/json"

	// The API groups the API server serves, each installed into legacyscheme with its
	// defaulting and conversion functions.
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	_ "k8s.io/kubernetes/pkg/apis/apiserverinternal/install"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/discovery/install"
	_ "k8s.io/kubernetes/pkg/apis/events/install"
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	_ "k8s.io/kubernetes/pkg/apis/storagemigration/install"
)

// scheme holds every built-in kind the API server serves, CustomResourceDefinitions included.
var scheme = func() *runtime.Scheme {
	apiextensionsinstall.Install(legacyscheme.Scheme)
	return legacyscheme.Scheme
}()

// Version is the minor version of Kubernetes whose API server code this package runs.
var Version = baseversion.DefaultKubeBinaryVersion

// BuiltIn returns obj (decoded JSON) as the API server would store and return it: decoded
// into its typed struct, defaulted, converted to the internal version and back, defaulted
// again (as a read from storage is), encoded. ok is false for a kind the scheme does not know.
// The error of an object that does not decode names the field, never a Secret's value.
func BuiltIn(obj map[string]any) (out map[string]any, ok bool, err error) {
	internal, known, err := internalOf(obj)
	if !known || err != nil {
		return nil, known, err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, _ := schema.ParseGroupVersion(apiVersion)
	gvk := gv.WithKind(kind)
	// Unsafe: the result may share memory with internal, which nothing uses again (nor the
	// typed object internalOf converted it from); a copy of a large CRD cost a fifth of this.
	external, err := scheme.UnsafeConvertToVersion(internal, gv)
	if err != nil {
		return nil, true, fmt.Errorf("%s: convert to %s: %w", gvk, gv, err)
	}
	scheme.Default(external)
	b, err := json.Marshal(external)
	if err != nil {
		return nil, true, fmt.Errorf("%s: encode: %w", gvk, err)
	}
	out, err = decodeJSON(b)
	if err != nil {
		return nil, true, fmt.Errorf("%s: decode: %w", gvk, err)
	}
	out["apiVersion"], out["kind"] = apiVersion, kind
	return out, true, nil
}

// decodeError says which field did not decode; for a Secret, only that it did not (a JSON
// error can quote the value).
func decodeError(gvk schema.GroupVersionKind, err error) error {
	if gvk.Group == "" && gvk.Kind == "Secret" {
		return fmt.Errorf("%s: does not decode as %s (the reason is not shown for a Secret)", gvk.Kind, gvk.GroupVersion())
	}
	return fmt.Errorf("%s: does not decode as %s: %w", gvk.Kind, gvk.GroupVersion(), err)
}

// CustomResource returns obj as the API server would store a custom resource whose CRD
// declares sch for its version (nil: obj as it is): metadata coerced to ObjectMeta, unknown fields
// pruned (unless preserved), nulls of non-nullable fields without a default dropped, then the
// schema's defaults applied.
// xref: k8s.io/apiextensions-apiserver pkg/apiserver/customresource_handler.go
// (unstructuredSchemaCoercer.apply, unstructuredDefaulter.Default).
func CustomResource(obj map[string]any, sch *Schema) (map[string]any, error) {
	if sch == nil {
		return obj, nil
	}
	s := sch.defaults
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	// Metadata as ObjectMeta holds it, saved before pruning and put back after, "starting clean".
	objectMeta, hasMeta, _, err := schemaobjectmeta.GetObjectMetaWithOptions(out, schemaobjectmeta.ObjectMetaOptions{DropMalformedFields: true})
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	structuralpruning.PruneWithOptions(out, s, true, structuralschema.UnknownFieldPathOptions{})
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(out, s)
	if ferr, _ := schemaobjectmeta.CoerceWithOptions(nil, out, s, false, schemaobjectmeta.CoerceOptions{DropInvalidFields: true}); ferr != nil {
		return nil, fmt.Errorf("metadata: %v", ferr)
	}
	if hasMeta {
		if err := schemaobjectmeta.SetObjectMeta(out, objectMeta); err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		if md, ok := out["metadata"].(map[string]any); ok && md["creationTimestamp"] == nil {
			delete(md, "creationTimestamp") // ObjectMeta's zero time, not a value
		}
	}
	structuraldefaulting.Default(out, s) // its defaults decoded as out is: whole numbers int64
	return out, nil
}

// Schema is a CRD version's openAPIV3Schema made ready once (NewSchema): its internal and
// structural forms, the structural form with its defaults pruned (what CustomResource
// applies), and its validation, made on first use (ValidateCustomResourceUpdate). A nil
// *Schema is a kind no CRD schema describes.
type Schema struct {
	internal   *apiextensionsinternal.JSONSchemaProps
	structural *structuralschema.Structural
	defaults   *structuralschema.Structural

	validateOnce sync.Once
	validation   *crValidation
	validateErr  error
}

// crdSchemas caches each schema by its JSON text.
var crdSchemas sync.Map

// NewSchema makes openAPIV3Schema (decoded) ready; nil for nil. Equal schemas are made once
// for the process. A caller that meets one schema many times (one per kind and version in a
// run) should keep the *Schema rather than call this for each object: it encodes the schema
// to find it.
func NewSchema(openAPIV3Schema map[string]any) (*Schema, error) {
	if openAPIV3Schema == nil {
		return nil, nil
	}
	b, err := json.Marshal(openAPIV3Schema)
	if err != nil {
		return nil, err
	}
	if s, ok := crdSchemas.Load(string(b)); ok {
		return s.(*Schema), nil
	}
	internal, err := internalSchema(b)
	if err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("CRD schema is not structural: %w", err)
	}
	defaults := s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(defaults); err != nil {
		return nil, fmt.Errorf("CRD schema defaults: %w", err)
	}
	c := &Schema{internal: internal, structural: s, defaults: defaults}
	crdSchemas.Store(string(b), c)
	return c, nil
}

// internalSchema decodes a CRD version's openAPIV3Schema (JSON) into the internal type the
// apiextensions code takes.
func internalSchema(b []byte) (*apiextensionsinternal.JSONSchemaProps, error) {
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(b, &v1); err != nil {
		return nil, fmt.Errorf("CRD schema: %w", err)
	}
	var internal apiextensionsinternal.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		return nil, fmt.Errorf("CRD schema: %w", err)
	}
	return &internal, nil
}

// decodeJSON decodes b with whole numbers as int64 and others as float64, as the objects
// elsewhere hold them (client-go's unstructured decoding).
func decodeJSON(b []byte) (map[string]any, error) {
	var out map[string]any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeTyped decodes a request body into the typed object of gvk as the API server's JSON
// serializer does (case-sensitive, integers kept), without defaulting. The serializer first
// reads the whole body once more only to find its apiVersion and kind, which the caller knows.
func decodeTyped(data []byte, gvk schema.GroupVersionKind) (runtime.Object, error) {
	obj, err := scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

var emulated struct {
	sync.Mutex
	minor string
	note  string
}

// Emulate makes the defaulting code behind feature gates follow the gates of a cluster that
// reports serverVersion ("v1.34.2"), and returns what the report should say about it: "" when
// the cluster runs this package's minor, else which minor's code ran and whether its gates
// could follow the cluster's.
func Emulate(serverVersion string) string {
	v, err := version.ParseGeneric(serverVersion)
	if err != nil {
		return fmt.Sprintf("defaulting of Kubernetes v%s (the cluster's version %q is not understood)", Version, serverVersion)
	}
	minor := fmt.Sprintf("%d.%d", v.Major(), v.Minor())
	emulated.Lock()
	defer emulated.Unlock()
	if emulated.minor == minor {
		return emulated.note
	}
	emulated.minor = minor
	own := version.MustParseGeneric(Version)
	switch {
	case minor == Version:
		emulated.note = ""
	case v.GreaterThan(own):
		emulated.note = fmt.Sprintf("defaulting of Kubernetes v%s; the cluster runs v%s, whose newer defaults are not known", Version, minor)
	default:
		// Quietly: the gate logs every feature an earlier query read, which is not news here.
		if err := setEmulation(version.MajorMinor(v.Major(), v.Minor())); err != nil {
			emulated.note = fmt.Sprintf("defaulting of Kubernetes v%s; the cluster runs v%s, whose feature gates could not be emulated (%s): gated defaults may differ",
				Version, minor, firstLine(err.Error()))
		} else {
			emulated.note = fmt.Sprintf("defaulting of Kubernetes v%s with the feature gates of v%s, the cluster's", Version, minor)
		}
	}
	return emulated.note
}

// setEmulation sets the feature gates' emulation version, without the log line the gate writes
// for each feature an earlier query read (not news here) where the gate can take a logger.
func setEmulation(v *version.Version) error {
	type quiet interface {
		SetEmulationVersionWithLogger(logger klog.Logger, emulationVersion *version.Version) error
	}
	if g, ok := utilfeature.DefaultMutableFeatureGate.(quiet); ok {
		return g.SetEmulationVersionWithLogger(logr.Discard(), v)
	}
	return utilfeature.DefaultMutableFeatureGate.SetEmulationVersion(v)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
