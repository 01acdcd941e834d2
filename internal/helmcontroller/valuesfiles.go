package helmcontroller

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
	securejoin "github.com/cyphar/filepath-securejoin"
	v2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/chartutil"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"
)

// valuesFileName is the chart's own values file, which valuesFiles may name.
const valuesFileName = "values.yaml"

// applyValuesFiles makes the chart's default values what spec.chart.spec.valuesFiles asks,
// as source-controller does when it builds the HelmChart helm-controller makes for spec.chart:
// the files merged in order (the last one wins, maps merged key by key), then written over the
// chart's values.yaml. sourceDir is the root of a GitRepository the chart was read from (the
// files are paths in the source, read from disk); empty, the chart came from a HelmRepository
// and the files are the chart's own (values.yaml its default values). valuesFiles naming only
// values.yaml changes nothing. A missing file is an error unless ignoreMissingValuesFiles.
// xref: source-controller internal/helm/chart/builder.go GetValuesFiles; builder_remote.go
// mergeChartValues; builder_local.go mergeFileValues; metadata.go OverwriteChartDefaultValues.
//
// Like source-controller, it then sets the chart version's build metadata to generation, the
// HelmChart's metadata.generation, after meta when there is one (the source's revision, with
// reconcileStrategy Revision), so that the artifact's consumer notices a change: charts whose
// labels carry .Chart.Version show it. Without valuesFiles, the build metadata is meta alone.
func applyValuesFiles(ch *chartv2.Chart, tpl v2.HelmChartTemplateSpec, sourceDir, meta string, generation int64) error {
	files := tpl.ValuesFiles
	if len(files) == 0 || len(files) == 1 && filepath.Clean(files[0]) == valuesFileName {
		return setVersionMetadata(ch, meta)
	}
	if meta != "" {
		meta += "."
	}
	if err := setVersionMetadata(ch, meta+strconv.FormatInt(generation, 10)); err != nil {
		return err
	}
	var merged map[string]any
	var err error
	if sourceDir != "" {
		merged, err = mergeSourceValues(sourceDir, files, tpl.IgnoreMissingValuesFiles)
	} else {
		merged, err = mergeChartValues(ch, files, tpl.IgnoreMissingValuesFiles)
	}
	if err != nil {
		return fmt.Errorf("spec.chart.spec.valuesFiles: %w", err)
	}
	return overwriteDefaultValues(ch, merged)
}

// setVersionMetadata makes meta the build metadata of the chart's version (nothing when "").
// xref: source-controller internal/helm/chart/builder_local.go Build (SetMetadata).
func setVersionMetadata(ch *chartv2.Chart, meta string) error {
	if meta == "" {
		return nil
	}
	ver, err := semver.NewVersion(ch.Metadata.Version)
	if err != nil {
		return fmt.Errorf("chart %s: version %q is not SemVer: %w", ch.Name(), ch.Metadata.Version, err)
	}
	if *ver, err = ver.SetMetadata(meta); err != nil {
		return err
	}
	ch.Metadata.Version = ver.String()
	return nil
}

// mergeChartValues merges the chart's files named (values.yaml its default values).
func mergeChartValues(ch *chartv2.Chart, paths []string, ignoreMissing bool) (map[string]any, error) {
	merged := map[string]any{}
	for _, p := range paths {
		name := filepath.Clean(p)
		if name == valuesFileName {
			merged = chartutil.MergeMaps(merged, ch.Values)
			continue
		}
		var data []byte
		for _, f := range ch.Files {
			if f.Name == name {
				data = f.Data
				break
			}
		}
		if data == nil {
			if ignoreMissing {
				continue
			}
			return nil, fmt.Errorf("no values file found at path '%s' in chart %s: fix the path, or set ignoreMissingValuesFiles", p, ch.Name())
		}
		values := map[string]any{}
		if err := yaml.Unmarshal(data, &values); err != nil {
			return nil, fmt.Errorf("unmarshaling values from '%s' failed: %w", p, err)
		}
		merged = chartutil.MergeMaps(merged, values)
	}
	return merged, nil
}

// mergeSourceValues merges the files at the paths named in the source at dir; no path leaves
// it.
func mergeSourceValues(dir string, paths []string, ignoreMissing bool) (map[string]any, error) {
	merged := map[string]any{}
	for _, p := range paths {
		full, err := securejoin.SecureJoin(dir, p)
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(full)
		switch {
		case err != nil && ignoreMissing && os.IsNotExist(err):
			continue
		case err != nil || !fi.Mode().IsRegular():
			return nil, fmt.Errorf("no values file found at path '%s' (reference '%s') in the source: fix the path, or set ignoreMissingValuesFiles",
				strings.TrimPrefix(full, dir), p)
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return nil, fmt.Errorf("could not read values from file '%s': %w", p, err)
		}
		values := map[string]any{}
		if err := yaml.Unmarshal(data, &values); err != nil {
			return nil, fmt.Errorf("unmarshaling values from '%s' failed: %w", p, err)
		}
		merged = chartutil.MergeMaps(merged, values)
	}
	return merged, nil
}

// overwriteDefaultValues writes vals over the chart's values.yaml and its default values read
// back from it. Empty (every file missing and ignored), it empties them, as source-controller
// does.
func overwriteDefaultValues(ch *chartv2.Chart, vals map[string]any) error {
	var data bytes.Buffer
	if len(vals) > 0 {
		if err := common.Values(vals).Encode(&data); err != nil {
			return err
		}
	}
	for _, f := range ch.Raw {
		if f.Name != valuesFileName {
			continue
		}
		if reflect.DeepEqual(f.Data, data.Bytes()) {
			return nil
		}
		for _, g := range ch.Files {
			if g.Name == valuesFileName {
				g.Data = data.Bytes()
			}
		}
		f.Data = data.Bytes()
		// As helm-controller loads the chart source-controller packaged: from the file.
		values, err := common.ReadValues(f.Data)
		if err != nil {
			return err
		}
		ch.Values = values
		return nil
	}
	return fmt.Errorf("spec.chart.spec.valuesFiles: chart %s has no %s to write the merged values over", ch.Name(), valuesFileName)
}
