package output

import (
	"html/template"
	"strings"
	"time"

	"github.com/helm-drift/helm-drift/internal/history"
)

// timelineTemplate is a release page's history: each divergence serve remembers, open ones
// first, with when it appeared, was last seen, was resolved, how often it came back and who
// moved it when. No value is in it.
var timelineTemplate = template.Must(template.New("timeline").Funcs(template.FuncMap{
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02T15:04:05Z")
	},
	"join": func(s []string) string { return strings.Join(s, ", ") },
}).Parse(`<section class="timeline"><h2>History of {{.What}}</h2>
{{- if .Entries}}
<table class="rows">
<thead><tr><th>State</th><th>Object</th><th>Field</th><th>Class</th><th>Since</th><th>Last seen</th><th>Resolved</th><th>Returns</th><th>Moved by</th></tr></thead>
<tbody>
{{- range .Entries}}
<tr><td>{{if .Open}}open{{else}}resolved{{end}}</td><td>{{.Object}}</td><td>{{.Path}}</td><td class="cls">{{.Class}}</td><td>{{stamp .FirstSeen}}</td><td>{{stamp .LastSeen}}</td><td>{{stamp .ResolvedAt}}</td><td class="n">{{.Returns}}</td><td>{{join .Managers}}{{if not .MovedAt.IsZero}} at {{stamp .MovedAt}}{{end}}</td></tr>
{{- end}}
</tbody>
</table>
{{- else}}
<p>No divergence seen since serve started remembering.</p>
{{- end}}
</section>`))

// TimelineSection is a release page's history section: what ("Helm release shop/web") and its
// divergences' entries.
func TimelineSection(what string, entries []history.Entry) (template.HTML, error) {
	var b strings.Builder
	err := timelineTemplate.Execute(&b, struct {
		What    string
		Entries []history.Entry
	}{what, entries})
	return template.HTML(b.String()), err
}
