package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// diffVerbDecl declares one diff verb: its usage line, the error messages that name the
// verbs, completion, the generated flag reference and the misplaced-flag messages are all made
// from diffVerbList.
type diffVerbDecl struct {
	// name is the verb ("upgrade"); args its positional arguments ("RELEASE CHART").
	name, args string
	// summary says in a few words what it compares with the cluster (diff's usage).
	summary string
	// compares ends the message of a flag given to this verb that belongs to another:
	// `"diff release" compares the stored manifest`.
	compares string
	// complete says what each positional argument completes to.
	complete []completeKind
	// make is the verb, new and unparsed.
	make func() diffVerb
}

// synopsis is "diff NAME ARGS [flags]".
func (d diffVerbDecl) synopsis() string {
	return "helm drift diff " + d.name + " " + d.args + " [flags]"
}

// diffVerbList is every diff verb, in the order usage lists them.
var diffVerbList = []diffVerbDecl{
	{name: "upgrade", args: "RELEASE CHART", summary: "what helm upgrade with these flags would install",
		compares: "renders the chart as helm upgrade with these flags would", complete: []completeKind{completeRelease, completeFiles},
		make: func() diffVerb { return &diffUpgradeCmd{} }},
	{name: "release", args: "RELEASE", summary: "the release Helm stored (--all, -A: every one)",
		compares: "compares the stored manifest", complete: []completeKind{completeRelease},
		make: func() diffVerb { return &diffReleaseCmd{} }},
	{name: "helmrelease", args: "NAME", summary: "what helm-controller would install for a HelmRelease",
		compares: "renders the HelmRelease's own chart, values and post-renderers", complete: []completeKind{completeHelmRelease},
		make: func() diffVerb { return &diffHelmReleaseCmd{} }},
	{name: "tree", args: "[PATH...] --base REV|DIR", summary: "a Flux repository, base against head, with no cluster",
		compares: "renders a Flux repository at two revisions, with no cluster", complete: []completeKind{completeFiles},
		make: func() diffVerb { return &diffTreeCmd{} }},
}

// diffVerbs are diff's verbs by name, each new and unparsed.
func diffVerbs() map[string]diffVerb {
	verbs := make(map[string]diffVerb, len(diffVerbList))
	for _, d := range diffVerbList {
		verbs[d.name] = d.make()
	}
	return verbs
}

// diffVerbDeclOf is the declaration of verb (ok false for none).
func diffVerbDeclOf(verb string) (diffVerbDecl, bool) {
	for _, d := range diffVerbList {
		if d.name == verb {
			return d, true
		}
	}
	return diffVerbDecl{}, false
}

// quotedVerbs lists the verbs as "diff NAME" (with their arguments when args), joined with
// commas and a final "or".
func quotedVerbs(args bool) string {
	var q []string
	for _, d := range diffVerbList {
		v := "diff " + d.name
		if args {
			v += " " + d.args
		}
		q = append(q, `"`+v+`"`)
	}
	return joinOr(q, "or")
}

// joinOr joins words as "a, b or c" (conj: "or", "and").
func joinOr(words []string, conj string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

// diffUsage is diff's usage, its verbs' lines made from diffVerbList.
func diffUsage() string {
	var b strings.Builder
	b.WriteString(`Compares what a release should be with the live cluster, field by field: DIFFERS,
CHART-ONLY, CLUSTER-ONLY, SHADOWS. An API-server default is never drift; a Secret's value is
never printed.

Usage:
`)
	width := 0
	for _, d := range diffVerbList {
		width = max(width, len(d.synopsis()))
	}
	for _, d := range diffVerbList {
		fmt.Fprintf(&b, "  %-*s   %s\n", width, d.synopsis(), d.summary)
	}
	b.WriteString(`
Run "helm drift diff VERB --help" for a verb's examples and flags.
Exit codes: 0 no drift, 2 drift found, 3 could not measure (never reported as clean), 1 an error.
Classes, predictions, normalisation, output formats: ` + docsURL + `diff.md
`)
	return b.String()
}

// withAll are the flags that go with --all or -A of the verbs that have them: their
// misplaced-flag message says so.
var withAll = map[string]string{
	"all-contexts": "several clusters (--kube-context given more than once, or --all-contexts) go with --all or -A of %s: one summary row per release and cluster",
	"progress":     "--progress goes with --all or -A of %s",
}

// misplacedFlag says where a flag that verb does not have belongs: the verbs that declare it,
// and what verb compares instead.
func misplacedFlag(verb, name string) string {
	if slices.Contains(refusedFlags, name) {
		return refusedMessage(name)
	}
	var owners []string
	for _, d := range diffVerbList {
		fs := pflag.NewFlagSet("", pflag.ContinueOnError)
		d.make().bind(fs)
		// --all goes with -A where both are (diff tree's --all, alone, renders every HelmRelease).
		if fs.Lookup(name) != nil && (name != "all" || fs.Lookup("all-namespaces") != nil) {
			owners = append(owners, `"diff `+d.name+`"`)
		}
	}
	where := joinOr(owners, "and")
	if msg, ok := withAll[name]; ok {
		return fmt.Sprintf(msg, where)
	}
	flag := "--" + name
	if name == "all" || name == "all-namespaces" {
		flag = "--all and -A"
	}
	goes := " goes with "
	if flag == "--all and -A" {
		goes = " go with "
	}
	if len(owners) > 1 {
		return flag + goes + where
	}
	d, _ := diffVerbDeclOf(verb)
	return fmt.Sprintf("%s%s%s: \"diff %s\" %s", flag, goes, where, verb, d.compares)
}
