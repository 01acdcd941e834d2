package output

import (
	"strings"
	"testing"
)

// TestWriteCommentRunNotes: what a run could not read and its notes lead the comment, escaped
// as Markdown, one line each, before the releases; with none, the comment has no such lists.
func TestWriteCommentRunNotes(t *testing.T) {
	var b strings.Builder
	if err := WriteComment(&b, nil, nil, GitHub, Options{Context: 3, Comments: 1,
		Problems: []string{"base: Kustomization flux-system/apps (clusters/c): spec.path \"./apps\" does not exist"},
		Notes:    []string{"HelmRelease apps/web moves: mark it *prune: disabled*\nfor the move"}}); err != nil {
		t.Fatal(err)
	}
	want := "### helm-drift\n\n**Could not be read or rendered**\n\n" +
		"- base: Kustomization flux-system/apps (clusters/c): spec.path \"./apps\" does not exist\n\n" +
		"**Notes**\n\n- HelmRelease apps/web moves: mark it \\*prune: disabled\\* for the move\n\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("comment:\n%s\nwant it to start with:\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteComment(&b, nil, nil, GitHub, Options{Context: 3, Comments: 1}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "**Notes**") || strings.Contains(b.String(), "Could not be read") {
		t.Errorf("comment without problems or notes:\n%s", b.String())
	}
}
