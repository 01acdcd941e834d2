// Package config reads helm-drift's versioned configuration file and turns it into transform
// rules. It validates everything it reads and names the file and the entry in every error; it
// never touches a manifest.
package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/helm-drift/helm-drift/internal/flux"
	"github.com/helm-drift/helm-drift/internal/selector"
	"github.com/helm-drift/helm-drift/internal/transform"
)

// APIVersion and Kind identify the one config format this helm-drift reads.
const (
	APIVersion = "helm-drift/v1"
	Kind       = "Config"
)

// maxConfigSize bounds the config file: it holds rules, not manifests.
const maxConfigSize = 1 << 20

// File is the config file:
//
//	apiVersion: helm-drift/v1
//	kind: Config
//	driftDetection:
//	  - selector: flux-system/*
//	    mode: enabled
//	    override: false
//	    ignore:
//	      - paths: ["/spec/replicas"]
//	        target: {kind: Deployment}
type File struct {
	APIVersion     string               `json:"apiVersion"`
	Kind           string               `json:"kind"`
	DriftDetection []DriftDetectionRule `json:"driftDetection,omitempty"`
	// Self holds the settings of render --self (the flags of the same names win).
	Self *Self `json:"self,omitempty"`
}

// Self is the self section of the config file:
//
//	self:
//	  repository: oci://registry.example/charts
//	  versionRange: ">=1.4.0 <2.0.0"
//	  interval: 10m
//	  serviceAccount: platform-installer
//	  valuesSecret: platform-values
//	  insecure: false
type Self struct {
	Repository     string `json:"repository,omitempty"`
	ChartName      string `json:"chartName,omitempty"`
	ChartVersion   string `json:"chartVersion,omitempty"`
	VersionRange   string `json:"versionRange,omitempty"`
	Interval       string `json:"interval,omitempty"`
	ServiceAccount string `json:"serviceAccount,omitempty"`
	ValuesSecret   string `json:"valuesSecret,omitempty"`
	Insecure       bool   `json:"insecure,omitempty"`
}

// DriftDetectionRule is one entry of driftDetection in the config file.
type DriftDetectionRule struct {
	// Selector: name, namespace/name, glob, or label:SELECTOR.
	Selector string `json:"selector"`
	// Mode: enabled, warn or disabled.
	Mode string `json:"mode"`
	// Ignore rules in Flux's syntax.
	Ignore []flux.IgnoreRule `json:"ignore,omitempty"`
	// Override replaces a driftDetection the chart sets itself.
	Override *bool `json:"override,omitempty"`
}

// Load reads and validates a config file.
func Load(path string) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, unwrapPathError(err))
	}
	if st.IsDir() {
		return nil, fmt.Errorf("config %s: is a directory; give the config file", path)
	}
	if st.Size() > maxConfigSize {
		return nil, fmt.Errorf("config %s: %d bytes, more than the %d a config may hold", path, st.Size(), maxConfigSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, unwrapPathError(err))
	}
	return Parse(path, data)
}

// Parse parses and validates a config file's contents; name is used in messages.
func Parse(name string, data []byte) (*File, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("config %s: not a YAML mapping: %v", name, cleanYAMLErr(err))
	}
	if head.APIVersion != APIVersion {
		if head.APIVersion == "" {
			return nil, fmt.Errorf("config %s: no apiVersion; start the file with \"apiVersion: %s\" and \"kind: %s\"", name, APIVersion, Kind)
		}
		return nil, fmt.Errorf("config %s: unknown apiVersion %q: this helm-drift reads %s", name, head.APIVersion, APIVersion)
	}
	if head.Kind != Kind {
		return nil, fmt.Errorf("config %s: kind %q, want %q", name, head.Kind, Kind)
	}
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("config %s: %v", name, cleanYAMLErr(err))
	}
	if _, err := f.Rules(name); err != nil {
		return nil, err
	}
	return &f, nil
}

// Rules turns the config's driftDetection entries into transform rules, in file order.
func (f *File) Rules(name string) ([]transform.Rule, error) {
	rules := make([]transform.Rule, 0, len(f.DriftDetection))
	for i, r := range f.DriftDetection {
		origin := fmt.Sprintf("config %s driftDetection[%d] (selector %q)", name, i, r.Selector)
		sel, err := selector.Parse(r.Selector)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", origin, err)
		}
		mode, err := flux.ParseMode(r.Mode)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", origin, err)
		}
		for j, ig := range r.Ignore {
			if err := ig.Validate(); err != nil {
				return nil, fmt.Errorf("%s: ignore[%d]: %w", origin, j, err)
			}
		}
		rules = append(rules, transform.Rule{Selector: sel, Mode: mode, Ignore: r.Ignore, Override: r.Override, Origin: origin})
	}
	return rules, nil
}

func cleanYAMLErr(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "error converting YAML to JSON: ")
	s = strings.TrimPrefix(s, "error unmarshaling JSON: while decoding JSON: ")
	s = strings.TrimPrefix(s, "yaml: ")
	s = strings.TrimPrefix(s, "json: ")
	return s
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
