package action

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/helm-drift/helm-drift/internal/diff"
	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/transform"
)

// IgnoreFromCluster returns the ignore rules diff --suggest-ignore suggests for the live
// objects of hr's release (render --ignore-from-cluster): one per field a controller owns that
// the chart states otherwise, measured offline (get/list only). The notes name each rule and
// its manager, and the fields left without one. A release that does not exist yet has nothing
// to suggest from: no rule and a note, not an error.
func IgnoreFromCluster(conn *Connection, hr transform.HelmReleaseRef) ([]flux.IgnoreRule, []string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*conn.timeout())
	defer cancel()
	cfg, err := conn.Configuration()
	if err != nil {
		return nil, nil, err
	}
	storage := hr.StorageNamespace
	if storage == "" {
		storage = hr.Namespace
	}
	release := flux.ReleaseName(hr.Name, hr.ReleaseName, hr.TargetNamespace)
	d := &DiffRelease{Config: cfg, Namespace: storage, Measure: Measure{Options: diff.Options{Normalize: diff.Offline, Workers: 8, Suggest: true}}}
	rep, err := d.Run(ctx, release)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, []string{fmt.Sprintf("release %s/%s is not installed yet: no live objects to suggest rules from", storage, release)}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var rules []flux.IgnoreRule
	var notes []string
	for _, r := range rep.Suggested.Rules {
		rules = append(rules, flux.IgnoreRule{Paths: []string{r.Pointer},
			Target: &flux.Target{Group: r.Group, Version: r.Version, Kind: r.Kind, Name: r.Name, Namespace: r.Namespace}})
		note := fmt.Sprintf("added ignore rule %s for %s (%s): set by %s: %s", r.Pointer, r.Object, r.Path, strings.Join(r.Managers, ", "), r.Why)
		if r.Indexed {
			note += "; the pointer picks a list element by its index: the rule breaks if the list is reordered"
		}
		notes = append(notes, note)
	}
	for _, s := range rep.Suggested.Skipped {
		notes = append(notes, fmt.Sprintf("no rule for %s %s: %s", s.Object, s.Path, s.Why))
	}
	notes = append(notes, rep.Suggested.Notes...)
	if rep.Unmeasured > 0 {
		notes = append(notes, fmt.Sprintf("%d objects of release %s/%s could not be read: no rule suggested for them", rep.Unmeasured, storage, release))
	}
	return rules, notes, nil
}
