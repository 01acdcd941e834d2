package live

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	kjson "sigs.k8s.io/json"
)

// listStream reads one page of a LIST as it arrives, an item at a time: the page's body is never
// held whole, nor every item's text beside the decoded items (client-go's dynamic client reads
// the body, then splits it into each item's text, then decodes them: on a 1,000-object release
// those two copies were a third of what a diff held beyond the objects themselves). Each item
// is decoded as client-go's unstructured scheme decodes it (whole numbers int64), and one
// without apiVersion and kind gets the list's, as that scheme gives them. query is the LIST's
// (limit, continue, fieldSelector). It returns the items and the continue token.
func listStream(ctx context.Context, rc rest.Interface, m *meta.RESTMapping, namespace string, query url.Values) ([]map[string]any, string, error) {
	req := rc.Get().AbsPath(resourcePath(m, namespace)...).SetHeader("Accept", "application/json")
	for k, vs := range query {
		for _, v := range vs {
			req = req.Param(k, v)
		}
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, "", err
	}
	defer body.Close()
	return decodeList(body)
}

// resourcePath is the path of a resource's collection: /api/v1 or /apis/GROUP/VERSION, then
// namespaces/NAMESPACE for a namespaced kind, then the resource.
func resourcePath(m *meta.RESTMapping, namespace string) []string {
	gvr := m.Resource
	path := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		path = []string{"/api", gvr.Version}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace && namespace != "" {
		path = append(path, "namespaces", namespace)
	}
	return append(path, gvr.Resource)
}

// decodeList decodes a JSON list (apiVersion, kind, metadata.continue, items) from r.
func decodeList(r io.Reader) ([]map[string]any, string, error) {
	dec := kjson.NewDecoderCaseSensitivePreserveInts(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, "", err
	}
	var apiVersion, kind, token string
	var items []map[string]any
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, "", fmt.Errorf("decoding the list: %w", err)
		}
		switch key {
		case "apiVersion":
			err = dec.Decode(&apiVersion)
		case "kind":
			err = dec.Decode(&kind)
		case "metadata":
			var md struct {
				Continue string `json:"continue"`
			}
			err = dec.Decode(&md)
			token = md.Continue
		case "items":
			items, err = decodeItems(dec)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return nil, "", fmt.Errorf("decoding the list's %v: %w", key, err)
		}
	}
	itemKind := strings.TrimSuffix(kind, "List")
	for _, it := range items {
		if it["apiVersion"] == nil && it["kind"] == nil {
			it["apiVersion"], it["kind"] = apiVersion, itemKind
		}
	}
	return items, token, nil
}

// decodeItems decodes the items array (or null) at dec, one item at a time, each as it is read
// (whole numbers int64, as client-go's unstructured decoding gives them).
func decodeItems(dec kjson.Decoder) ([]map[string]any, error) {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return nil, err // null: no items
	}
	if !isDelim(tok, '[') {
		return nil, fmt.Errorf("items: want an array, got %v", tok)
	}
	var items []map[string]any
	for dec.More() {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return nil, err
		}
		if obj == nil {
			obj = map[string]any{} // a null item: an object with only the list's kind, as client-go decodes it
		}
		items = append(items, obj)
	}
	_, err = dec.Token() // ]
	return items, err
}

func expectDelim(dec kjson.Decoder, want rune) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("decoding the list: %w", err)
	}
	if !isDelim(tok, want) {
		return fmt.Errorf("decoding the list: want %q, got %v", want, tok)
	}
	return nil
}

// isDelim reports whether tok is the delimiter d (sigs.k8s.io/json's decoder has a Delim type
// of its own).
func isDelim(tok any, d rune) bool {
	s, ok := tok.(fmt.Stringer)
	return ok && s.String() == string(d)
}
