package action

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"maps"
	"slices"
	"sort"
	"strconv"

	chart3 "helm.sh/helm/v3/pkg/chart"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// renderInputs is what a Helm render depends on besides the cluster: the chart (its metadata,
// templates, files, default values and schema, its dependencies the same way) and the
// user-supplied values. Two renders of equal inputs differ only where the chart renders
// differently each time (random values, timestamps) or once its objects exist (lookup).
type renderInputs struct {
	Chart  chartInputs    `json:"chart"`
	Config map[string]any `json:"config"`
}

type chartInputs struct {
	Name, Version string
	Files         map[string][]byte
	Values        map[string]any
	Schema        []byte
	Dependencies  []chartInputs
}

// digest is the inputs' SHA-256 ("" when they cannot be encoded). The files are hashed as
// they are, each after its name and length (a chart's crds/ and dashboards can be megabytes:
// encoding them first cost more than the hash); values and schema as JSON, whose map keys are
// sorted, so equal inputs hash equal.
func (in renderInputs) digest() string {
	if len(in.Config) == 0 {
		in.Config = nil // a release stores no values as null, a render as {}
	}
	h := sha256.New()
	if !in.Chart.hash(h) || !hashJSON(h, in.Config) {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hash writes c into h: metadata, values and schema, the files by name, then the
// dependencies. false when the values cannot be encoded.
func (c chartInputs) hash(h hash.Hash) bool {
	if !hashJSON(h, []any{c.Name, c.Version, c.Values}) {
		return false
	}
	hashBytes(h, c.Schema)
	names := slices.Sorted(maps.Keys(c.Files))
	hashBytes(h, []byte(strconv.Itoa(len(names))))
	for _, n := range names {
		hashBytes(h, []byte(n))
		hashBytes(h, c.Files[n])
	}
	hashBytes(h, []byte(strconv.Itoa(len(c.Dependencies))))
	for _, d := range c.Dependencies {
		if !d.hash(h) {
			return false
		}
	}
	return true
}

// hashBytes writes b after its length, so that no two sequences of writes hash alike.
func hashBytes(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

func hashJSON(h hash.Hash, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	hashBytes(h, b)
	return true
}

// inputs3 reads a Helm 3 release's (or render's) inputs.
func inputs3(ch *chart3.Chart, config map[string]any) renderInputs {
	return renderInputs{Chart: chart3Inputs(ch), Config: config}
}

func chart3Inputs(ch *chart3.Chart) chartInputs {
	if ch == nil || ch.Metadata == nil {
		return chartInputs{}
	}
	c := chartInputs{Name: ch.Metadata.Name, Version: ch.Metadata.Version, Files: map[string][]byte{}, Values: ch.Values, Schema: ch.Schema}
	for _, f := range append(append([]*chart3.File{}, ch.Templates...), ch.Files...) {
		c.Files[f.Name] = f.Data
	}
	for _, d := range ch.Dependencies() {
		c.Dependencies = append(c.Dependencies, chart3Inputs(d))
	}
	return c.normal()
}

// inputs4 reads a Helm 4 release's (or render's) inputs.
func inputs4(ch *chartv2.Chart, config map[string]any) renderInputs {
	return renderInputs{Chart: chart4Inputs(ch), Config: config}
}

func chart4Inputs(ch *chartv2.Chart) chartInputs {
	if ch == nil || ch.Metadata == nil {
		return chartInputs{}
	}
	c := chartInputs{Name: ch.Metadata.Name, Version: ch.Metadata.Version, Files: map[string][]byte{}, Values: ch.Values, Schema: ch.Schema}
	for _, f := range ch.Templates {
		c.Files[f.Name] = f.Data
	}
	for _, f := range ch.Files {
		c.Files[f.Name] = f.Data
	}
	for _, d := range ch.Dependencies() {
		c.Dependencies = append(c.Dependencies, chart4Inputs(d))
	}
	return c.normal()
}

// normal makes the empty forms one: a stored release and a loaded chart write no values,
// schema or files differently (null, {} or absent).
func (c chartInputs) normal() chartInputs {
	if len(c.Values) == 0 {
		c.Values = nil
	}
	if len(c.Schema) == 0 {
		c.Schema = nil
	}
	sortDependencies(c.Dependencies)
	return c
}

func sortDependencies(ds []chartInputs) {
	sort.Slice(ds, func(i, j int) bool { return ds[i].Name+"@"+ds[i].Version < ds[j].Name+"@"+ds[j].Version })
}
