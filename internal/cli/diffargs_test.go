package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseDiffDeployArgs: a deploy's helm upgrade argument list after "--" reaches the same
// options as the flags given directly; flags that change nothing diff measures are accepted;
// diff's own flags are refused after "--"; "diff release" refuses upgrade flags.
func TestParseDiffDeployArgs(t *testing.T) {
	deploy := []string{"app", "./chart", "-n", "shop", "--set", "a=1", "--set-literal", "b=x,y", "--skip-schema-validation",
		"--take-ownership", "--wait", "--wait-for-jobs", "--timeout", "10m", "--atomic", "--description", "release 42", "--history-max", "3",
		"--create-namespace", "--labels", "team=web"}
	type got struct {
		Args                []string
		Namespace           string
		Set, Literal        []string
		SkipSchema, TakeOwn bool
		Output              string
	}
	read := func(v diffVerb, args []string) got {
		o := v.(*diffUpgradeCmd)
		s := o.up.Spec
		return got{args, o.namespace, s.Values.Values, s.Values.LiteralValues, s.SkipSchemaValidation, o.up.TakeOwnership, o.out.format}
	}
	for name, args := range map[string][]string{
		"direct":   append([]string{"upgrade", "-o", "json"}, deploy...),
		"after --": append([]string{"upgrade", "-o", "json", "--"}, deploy...),
		// helm upgrade's own -o, Helm 4's --wait=watcher and a --dry-run after "--" change
		// nothing diff measures, and diff's -o stays.
		"after --, helm's -o": append(append([]string{"upgrade", "-o", "json", "--"}, deploy...), "-o", "yaml", "--wait=watcher", "--dry-run=server"),
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			_, o, fs, code, done := parseDiff(args, &out, &errOut)
			if done {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			if err := o.validate(fs); err != nil {
				t.Fatal(err)
			}
			want := got{[]string{"upgrade", "app", "./chart"}, "shop", []string{"a=1"}, []string{"b=x,y"}, true, true, "json"}
			if diff := cmp.Diff(want, read(o, fs.Args())); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"diff flag after --":                {[]string{"upgrade", "--", "app", "./chart", "--normalize", "offline"}, "unknown flag: --normalize"},
		"a cluster flag diff cannot honour": {[]string{"upgrade", "app", "./chart", "--kube-token", "t0ken"}, "--kube-token: diff cannot honour it"},
		"the same after --":                 {[]string{"upgrade", "--", "app", "./chart", "--kube-apiserver=https://x"}, "--kube-apiserver: diff cannot honour it"},
		"-- without upgrade":                {[]string{"release", "--", "app", "./chart"}, `"--" goes after "diff upgrade"`},
		"-- with one argument":              {[]string{"upgrade", "--", "app"}, "want helm upgrade's arguments: RELEASE CHART"},
		"release with an upgrade flag":      {[]string{"release", "app", "--wait"}, `--wait goes with "diff upgrade"`},
		"two clusters, one release":         {[]string{"release", "app", "--kube-context", "a", "--kube-context", "b"}, "go with --all or -A"},
		"every cluster, an upgrade":         {[]string{"upgrade", "app", "./chart", "--all-contexts"}, "go with --all or -A"},
		"every context and one named":       {[]string{"release", "-A", "--all-contexts", "--kube-context", "a"}, "--all-contexts measures every context"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			_, o, fs, _, done := parseDiff(tc.args, &out, &errOut)
			msg := errOut.String()
			if !done {
				if err := o.validate(fs); err != nil {
					msg = err.Error()
				}
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("%v: %q, want it to say %q", tc.args, msg, tc.want)
			}
		})
	}
}

// TestMisplacedFlag: a flag of another verb is refused with the verbs that declare it (read
// from their flag sets) and what the verb given compares instead.
func TestMisplacedFlag(t *testing.T) {
	for _, tc := range []struct{ verb, flag, want string }{
		{"release", "file", `--file goes with "diff helmrelease": "diff release" compares the stored manifest`},
		{"helmrelease", "set", `--set goes with "diff upgrade": "diff helmrelease" renders the HelmRelease's own chart, values and post-renderers`},
		{"release", "engine", `--engine goes with "diff upgrade": "diff release" compares the stored manifest`},
		{"upgrade", "all", `--all and -A go with "diff release" and "diff helmrelease"`},
		{"upgrade", "progress", `--progress goes with --all or -A of "diff release" and "diff helmrelease"`},
	} {
		if got := misplacedFlag(tc.verb, tc.flag); got != tc.want {
			t.Errorf("diff %s --%s:\n got %s\nwant %s", tc.verb, tc.flag, got, tc.want)
		}
	}
	// diff's usage lists every declared verb, once.
	for _, d := range diffVerbList {
		if n := strings.Count(diffUsage(), d.synopsis()); n != 1 {
			t.Errorf("diff's usage lists %q %d times", d.synopsis(), n)
		}
	}
}
