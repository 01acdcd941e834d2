package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	data := `apiVersion: helm-drift/v1
kind: Config
driftDetection:
  - selector: flux-system/*
    mode: enabled
  - selector: label:tier=db
    mode: warn
    override: true
    ignore:
      - paths: ["/spec/replicas", "/metadata/annotations/a~1b"]
        target: {kind: Deployment, labelSelector: "app=db"}
`
	f, err := Parse("c.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := f.Rules("c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, r.Selector.String()+"="+string(r.Mode))
	}
	if diff := cmp.Diff([]string{"flux-system/*=enabled", "label:tier=db=warn"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if rules[0].Override != nil || rules[1].Override == nil || !*rules[1].Override {
		t.Errorf("override not read: %v %v", rules[0].Override, rules[1].Override)
	}
	if len(rules[1].Ignore) != 1 || rules[1].Ignore[0].Target.Kind != "Deployment" {
		t.Errorf("ignore not read: %+v", rules[1].Ignore)
	}
}

func TestParseErrors(t *testing.T) {
	head := "apiVersion: helm-drift/v1\nkind: Config\n"
	tests := map[string]struct{ data, want string }{
		"no version":         {"kind: Config\n", `config c.yaml: no apiVersion`},
		"unknown version":    {"apiVersion: helm-drift/v9\nkind: Config\n", `unknown apiVersion "helm-drift/v9": this helm-drift reads helm-drift/v1`},
		"wrong kind":         {"apiVersion: helm-drift/v1\nkind: Other\n", `kind "Other", want "Config"`},
		"unknown field":      {head + "driftDetections: []\n", `unknown field "driftDetections"`},
		"unknown rule field": {head + "driftDetection:\n  - selector: a\n    mode: enabled\n    modes: x\n", `config c.yaml: unknown field "modes"`},
		"duplicate key":      {head + "driftDetection: []\ndriftDetection: []\n", `"driftDetection" already set`},
		"bad mode":           {head + "driftDetection:\n  - selector: a\n    mode: on\n", `driftDetection[0] (selector "a"): unknown drift detection mode "true": want enabled, warn or disabled (YAML reads on/off/yes/no as booleans)`},
		"no mode":            {head + "driftDetection:\n  - selector: a\n", `unknown drift detection mode ""`},
		"bad selector":       {head + "driftDetection:\n  - selector: A/B/C\n    mode: warn\n", `more than one "/"`},
		"bad pointer":        {head + "driftDetection:\n  - selector: a\n    mode: warn\n    ignore: [{paths: [spec/replicas]}]\n", `ignore[0]: ignore path "spec/replicas" is not a JSON pointer`},
		"bad escape":         {head + "driftDetection:\n  - selector: a\n    mode: warn\n    ignore: [{paths: [/a~2b]}]\n", `"~" at offset 2 must be followed by 0`},
		"no paths":           {head + "driftDetection:\n  - selector: a\n    mode: warn\n    ignore: [{target: {kind: X}}]\n", `ignore rule has no paths`},
		"bad target":         {head + "driftDetection:\n  - selector: a\n    mode: warn\n    ignore: [{paths: [/a], target: {labelSelector: 'a in (b'}}]\n", `ignore target labelSelector`},
		"not yaml":           {"{{{", `config c.yaml: not a YAML mapping`},
		"a list":             {"- a\n", `not a YAML mapping`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, maxConfigSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "missing.yaml"): "no such file or directory",
		dir:                                "is a directory",
		big:                                "more than the",
	} {
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%s) error = %v, want one containing %q", path, err, want)
		}
	}
}
