package varying

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestAnalyze: which templates a second render must render again, and keep, on small charts
// written for each rule; every case that cannot be told asks for all of them.
func TestAnalyze(t *testing.T) {
	const helpers = `{{- define "app.name" -}}{{ .Chart.Name }}{{- end -}}
{{- define "app.password" -}}{{ randAlphaNum 16 }}{{- end -}}
{{- define "app.password.indirect" -}}{{ include "app.password" . }}{{- end -}}`
	tests := []struct {
		name      string
		templates map[string]string // under c/templates/
		texts     []string
		rerender  []string // "" = no template; nil with all
		keep      []string
		all       string // a part of Why when everything must render again
	}{
		{
			name:      "steady templates render once",
			templates: map[string]string{"_helpers.tpl": helpers, "cm.yaml": `name: {{ include "app.name" . }}{{ range $k, $v := .Values.m }}{{ $k }}{{ end }}{{ .Values.x | default "a" | upper | quote }}`},
			rerender:  []string{},
			keep:      []string{"_helpers.tpl"},
		},
		{
			name:      "a random value, itself or through two includes",
			templates: map[string]string{"_helpers.tpl": helpers, "direct.yaml": `{{ uuidv4 }}`, "indirect.yaml": `p: {{ include "app.password.indirect" . | b64enc }}`, "cm.yaml": `{{ include "app.name" . }}`},
			rerender:  []string{"direct.yaml", "indirect.yaml"},
			keep:      []string{"_helpers.tpl", "direct.yaml", "indirect.yaml"},
		},
		{
			name:      "the template action follows as include does",
			templates: map[string]string{"_helpers.tpl": helpers, "a.yaml": `{{ template "app.password" . }}`},
			rerender:  []string{"a.yaml"},
			keep:      []string{"_helpers.tpl", "a.yaml"},
		},
		{
			name: "a file that defines a named template is kept; one that includes a file is given it",
			templates: map[string]string{
				"defs.yaml":   `{{ define "cert" }}{{ genCA "x" 365 }}{{ end }}kind: ConfigMap`,
				"secret.yaml": `{{ include "cert" . }}`,
				"cm.yaml":     `v: {{ .Values.v }}`,
				"deploy.yaml": `checksum: {{ include (print $.Template.BasePath "/cm.yaml") . | sha256sum }} {{ include (printf "%s/secret.yaml" .Template.BasePath) . | sha256sum }}`,
			},
			rerender: []string{"deploy.yaml", "secret.yaml"},
			keep:     []string{"cm.yaml", "defs.yaml", "deploy.yaml", "secret.yaml"},
		},
		{
			name:      "keys and values whose order does not show",
			templates: map[string]string{"a.yaml": `{{ range keys .Values.m | sortAlpha }}{{ . }}{{ end }}{{ len (keys .Values.m) }}{{ if has "a" (keys .Values.m) }}{{ end }}{{ sortAlpha (values .Values.m) }}`, "b.yaml": `{{ first (keys .Values.m) }}`},
			rerender:  []string{"b.yaml"},
			keep:      []string{"b.yaml"},
		},
		{
			name:      "the clock, lookup and a function not known",
			templates: map[string]string{"a.yaml": `{{ now | date "2006" }}`, "b.yaml": `{{ (lookup "v1" "Secret" "ns" "s").data }}`, "c.yaml": `{{ someNewFunc 1 }}`, "d.yaml": `{{ toYaml .Values | indent 2 }}`},
			rerender:  []string{"a.yaml", "b.yaml", "c.yaml"},
			keep:      []string{"a.yaml", "b.yaml", "c.yaml"},
		},
		{
			name:      "tpl of a value that is a template calling a random function",
			templates: map[string]string{"a.yaml": `{{ tpl .Values.t . }}`, "b.yaml": `{{ .Values.t }}`},
			texts:     []string{`{{ randAlpha 5 }}`, `{{ $labels.instance }} fails in tpl`, "no template"},
			rerender:  []string{"a.yaml"},
			keep:      []string{"a.yaml"},
		},
		{
			name:      "tpl of texts that are steady or that tpl could not render",
			templates: map[string]string{"a.yaml": `{{ tpl .Values.t . }}`},
			texts:     []string{`{{ .Release.Name }}-x`, `{{ $labels.instance }}`, `{{ instance }}`},
			rerender:  []string{},
			keep:      []string{},
		},
		{
			name:      "tpl of a template's own string constant",
			templates: map[string]string{"a.yaml": `{{ tpl "{{ randNumeric 3 }}" . }}`},
			rerender:  []string{"a.yaml"},
			keep:      []string{"a.yaml"},
		},
		{
			name:      "a random value stored where another template may read it",
			templates: map[string]string{"_helpers.tpl": `{{ define "gen" }}{{ $_ := set .Values "pw" (randAlphaNum 8) }}{{ end }}`, "a.yaml": `{{ include "gen" . }}`, "b.yaml": `{{ .Values.pw }}`},
			all:       "may store its result",
		},
		{
			name:      "a set beside no random value is steady",
			templates: map[string]string{"a.yaml": `{{ $d := dict }}{{ $_ := set $d "k" "v" }}{{ $d.k }}`},
			rerender:  []string{},
			keep:      []string{},
		},
		{
			name: "a random value stored in a map of the template's own",
			templates: map[string]string{
				"a.yaml": `{{ $d := dict }}{{ $_ := set $d "pw" (randAlphaNum 5) }}{{ $d.pw }}`,
				"b.yaml": `{{ $x := merge (dict) (dict "a" 1) }}{{ $x = merge $x (dict "b" 1) }}{{ $_ := set $x "t" now }}{{ $x = deepCopy .Values | mergeOverwrite $x }}{{ $y := dict "v" .Values.v }}{{ $_ := set $y "t" now }}`,
				"c.yaml": `{{ .Values.pw }}`,
			},
			rerender: []string{"a.yaml", "b.yaml"},
			keep:     []string{"a.yaml", "b.yaml"},
		},
		{
			name:      "a random value stored in a variable that holds the values",
			templates: map[string]string{"a.yaml": `{{ $v := dict }}{{ $v = .Values }}{{ $_ := set $v "pw" (randAlphaNum 5) }}`},
			all:       "may store its result",
		},
		{
			name:      "a random value stored in an element of a range",
			templates: map[string]string{"a.yaml": `{{ range $k, $m := .Values.maps }}{{ $_ := set $m "pw" (randAlphaNum 3) }}{{ end }}`},
			all:       "may store its result",
		},
		{
			// merge changes its target's nested maps in place: here the values' own
			name:      "a random value merged into a map of the template's own that holds the values'",
			templates: map[string]string{"a.yaml": `{{ $x := dict "a" .Values.a }}{{ $_ := mergeOverwrite $x (dict "a" (dict "pw" (randAlphaNum 3))) }}`},
			all:       "may store its result",
		},
		{
			name:      "a random value merged into the values",
			templates: map[string]string{"a.yaml": `{{ $_ := merge .Values.a (dict "k" uuidv4) }}`},
			all:       "may store its result",
		},
		{
			name:      "an include by a computed name",
			templates: map[string]string{"a.yaml": `{{ include (printf "app.%s" .Values.kind) . }}`},
			all:       "computed name",
		},
		{
			name:      "a template that does not parse",
			templates: map[string]string{"a.yaml": `{{ if }}`},
			all:       "does not parse",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var templates []Template
			for _, name := range slices.Sorted(maps.Keys(tt.templates)) {
				templates = append(templates, Template{Name: "c/templates/" + name, Data: []byte(tt.templates[name])})
			}
			a := Analyze(templates, tt.texts)
			if tt.all != "" {
				if !a.All || !strings.Contains(a.Why, tt.all) {
					t.Fatalf("All %v (%s), want all: %s", a.All, a.Why, tt.all)
				}
				return
			}
			if a.All {
				t.Fatalf("All: %s", a.Why)
			}
			if got := short(slices.Collect(maps.Keys(a.Rerender))); !slices.Equal(got, tt.rerender) {
				t.Errorf("Rerender %v, want %v (%v)", got, tt.rerender, a.Rerender)
			}
			if got := short(slices.Collect(maps.Keys(a.Keep))); !slices.Equal(got, tt.keep) {
				t.Errorf("Keep %v, want %v", got, tt.keep)
			}
		})
	}
}

func short(names []string) []string {
	out := []string{}
	for _, n := range names {
		out = append(out, strings.TrimPrefix(n, "c/templates/"))
	}
	slices.Sort(out)
	return out
}
