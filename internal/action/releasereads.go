package action

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"

	release3 "helm.sh/helm/v3/pkg/release"
	driver3 "helm.sh/helm/v3/pkg/storage/driver"
	release4 "helm.sh/helm/v4/pkg/release"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"

	"github.com/helm-drift/helm-drift/internal/memo"
)

// releaseReads shares the decoding of one release's records between the reads one diff
// upgrade makes of its storage: the release itself (helm get), which Helm wrote it (Helm 4's
// get), and each of the two renders (the SDK's upgrade reads the release's history). Each of
// those reads decoded every revision again, its chart included (base64, gzip, JSON): four
// times the history for one diff, about 0.05 s of CPU per revision of kube-prometheus-stack,
// and a release keeps up to ten. A query is decoded once and each reader gets its own deep
// copy, which it may change as the SDKs do. The storage is read-only through it: a diff
// writes no release (a dry run never does), so a write is an error, never a change.
type releaseReads struct {
	v3 memo.Map[string, []*release3.Release]
	v4 memo.Map[string, []release4.Releaser]
}

// errReadOnly: something tried to write release storage during a diff.
var errReadOnly = errors.New("release storage is read-only during a diff (a dry run writes no release)")

// queryKey is labels as one string, whatever their order.
func queryKey(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k + "=" + labels[k] + ",")
	}
	return b.String()
}

// shared3 is a Helm 3 storage driver whose queries r answers (see releaseReads).
type shared3 struct {
	driver3.Driver
	r *releaseReads
}

// Query decodes labels' releases once; each call gets copies.
func (d shared3) Query(labels map[string]string) ([]*release3.Release, error) {
	rls, err := d.r.v3.Get(queryKey(labels), func() ([]*release3.Release, error) { return d.Driver.Query(labels) })
	if err != nil {
		return nil, err
	}
	return deepCopy(rls), nil
}

// Create refuses.
func (shared3) Create(string, *release3.Release) error { return errReadOnly }

// Update refuses.
func (shared3) Update(string, *release3.Release) error { return errReadOnly }

// Delete refuses.
func (shared3) Delete(string) (*release3.Release, error) { return nil, errReadOnly }

// shared4 is a Helm 4 storage driver whose queries r answers (see releaseReads).
type shared4 struct {
	driver4.Driver
	r *releaseReads
}

// Query decodes labels' releases once; each call gets copies.
func (d shared4) Query(labels map[string]string) ([]release4.Releaser, error) {
	rls, err := d.r.v4.Get(queryKey(labels), func() ([]release4.Releaser, error) { return d.Driver.Query(labels) })
	if err != nil {
		return nil, err
	}
	return deepCopy(rls), nil
}

// Create refuses.
func (shared4) Create(string, release4.Releaser) error { return errReadOnly }

// Update refuses.
func (shared4) Update(string, release4.Releaser) error { return errReadOnly }

// Delete refuses.
func (shared4) Delete(string) (release4.Releaser, error) { return nil, errReadOnly }

// deepCopy returns a copy of v that shares nothing a caller can change with it: pointers,
// maps, slices and interfaces are copied all the way down (a []byte with one copy). An
// unexported field is copied as it is: the Helm types' are a chart's parent and dependencies,
// which a decoded release does not hold, and time.Time's. v must hold no cycle through
// exported fields (a decoded release holds none).
func deepCopy[T any](v T) T {
	out := reflect.New(reflect.TypeFor[T]()).Elem()
	out.Set(copyValue(reflect.ValueOf(&v).Elem()))
	return out.Interface().(T)
}

func copyValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(copyValue(v.Elem()))
		return p
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		i := reflect.New(v.Type()).Elem()
		i.Set(copyValue(v.Elem()))
		return i
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			m.SetMapIndex(it.Key(), copyValue(it.Value()))
		}
		return m
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		if v.Type().Elem().Kind() == reflect.Uint8 {
			reflect.Copy(s, v)
			return s
		}
		for i := range v.Len() {
			s.Index(i).Set(copyValue(v.Index(i)))
		}
		return s
	case reflect.Array:
		a := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			a.Index(i).Set(copyValue(v.Index(i)))
		}
		return a
	case reflect.Struct:
		s := reflect.New(v.Type()).Elem()
		s.Set(v)
		for i := range v.NumField() {
			if f := s.Field(i); f.CanSet() {
				f.Set(copyValue(v.Field(i)))
			}
		}
		return s
	}
	return v
}
