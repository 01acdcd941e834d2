package live

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestDecodeList: a LIST read as it arrives decodes to what client-go's unstructured scheme
// decodes from the whole body (items without apiVersion and kind get the list's, whole
// numbers stay int64, others float64, a null item an object of the list's kind), with the
// continue token; "items": null is none; a body cut short or not a list is an error.
func TestDecodeList(t *testing.T) {
	for _, tc := range []struct {
		name, body, token string
		items             int
		wantErr           bool
	}{
		{"built-in items without kind", `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"abc"},"unknown":{"a":[1,{"b":null}]},
			"items":[{"metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v"}},{"metadata":{"name":"b"},"data":null}]}`, "abc", 2, false},
		{"custom resources with kind, numbers", `{"apiVersion":"example.com/v1","items":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},
			"spec":{"size":3,"ratio":0.5,"big":9007199254740993,"list":[1,2.5,{"n":-4}]}}],"kind":"WidgetList","metadata":{}}`, "", 1, false},
		{"no items", `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":null}`, "", 0, false},
		{"empty", `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[]}`, "", 0, false},
		{"a null item", `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[null,{"metadata":{"name":"a"}}]}`, "", 2, false},
		{"cut short", `{"kind":"ConfigMapList","apiVersion":"v1","items":[{"metadata":{"name":"a"}`, "", 0, true},
		{"not a list", `[1,2]`, "", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, token, err := decodeList(strings.NewReader(tc.body))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error, %d items", len(items))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if token != tc.token || len(items) != tc.items {
				t.Fatalf("token %q, %d items; want %q, %d", token, len(items), tc.token, tc.items)
			}
			var want unstructured.UnstructuredList
			if err := want.UnmarshalJSON([]byte(tc.body)); err != nil {
				t.Fatal(err)
			}
			for i := range items {
				if !reflect.DeepEqual(items[i], want.Items[i].Object) {
					t.Errorf("item %d:\n%#v\nclient-go decodes:\n%#v", i, items[i], want.Items[i].Object)
				}
			}
		})
	}
}
