package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// browser starts headless Chromium for one test (as the machines here run it: no sandbox as
// root, no background networking, a new profile) and returns a context that drives it.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := testenv.Chromium()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no headless Chromium: .ci/run installs Debian's chromium-headless-shell")
		}
		t.Skip("no headless Chromium (apt-get install chromium-headless-shell, or set HELM_DRIFT_CHROMIUM)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000), chromedp.IgnoreCertErrors)
	for flag, v := range testenv.ChromiumFlags {
		opts = append(opts, chromedp.Flag(flag, v))
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelTimeout)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	// Every error the pages raise (a script's exception, console.error, a refused inline
	// script or style, a bad resource) fails the test.
	var mu sync.Mutex
	var errs []string
	if err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			msg = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
		case *cdpruntime.EventConsoleAPICalled:
			if e.Type == cdpruntime.ConsoleAPICalledTypeError {
				msg = "console.error"
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				msg = string(e.Entry.Source) + ": " + e.Entry.Text
			}
		}
		if msg != "" {
			mu.Lock()
			errs = append(errs, msg)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range errs {
			t.Errorf("the browser's console: %s", e)
		}
	})
	return ctx
}

// screenshot saves the page as name.png: in $HELM_DRIFT_SCREENSHOTS when set (make
// screenshots: the README's pictures), else in the test's directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("HELM_DRIFT_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if len(png) < 1000 {
		t.Errorf("screenshot %s: %d bytes", name, len(png))
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleBrowser: the drift console in a real browser (headless Chromium driven over the
// DevTools protocol), against serve on the test environment with the mutation matrix applied:
// a scaled Deployment, an env entry by another manager, a deleted ConfigMap, a Secret's changed
// key, and a HelmRelease whose values changed. A browser without a token lands on the sign-in
// page; signed in with the token of a ServiceAccount the chart binds to its viewer
// ClusterRole, the table lists every release and HelmRelease with the counts of serve's
// /report; filtering by class narrows it; a click opens the release, whose rows are those of
// diff release -o json and whose diff hunks are those of -o diff; no Secret value is in the
// DOM; diff release -o html, opened from a file, shows the same rows; the browser's console
// has no error on any page; a screenshot of each page is saved.
func TestConsoleBrowser(t *testing.T) {
	t.Parallel() // its own namespaces, Helm homes, processes and browser
	ctx := browser(t)
	h := clusterHelm(t, "helm4")
	ns := cluster.Namespace(t)
	kctx := context.Background()
	kc := cluster.Kube
	const marker = "CONSOLE-SECRET-MARKER-5d1e"
	hrNS := installWebBoth(t, h, ns, marker)
	// A release that drifts only after serve's first runs: its "since" is later than web's.
	h.run(t, false, nil, "install", "late", "testdata/charts/webapp", "-n", ns, "--set", "headless=true")

	// The mutation matrix: TestServe's edits, and an env entry by another manager
	// (server-side apply).
	editWebBoth(t, ns, hrNS, marker)
	if _, err := kc.AppsV1().Deployments(ns).Patch(kctx, "web", types.ApplyPatchType, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"selector":{"matchLabels":{"app":"web"}},
		"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","env":[{"name":"INJECTED","value":"1"}]}]}}}}`), metav1.PatchOptions{FieldManager: "sidecar-injector"}); err != nil {
		t.Fatal(err)
	}

	// The chart, confined to the two namespaces, its viewer ClusterRole bound to a
	// ServiceAccount.
	h.run(t, false, nil, "install", "console", "charts/helm-drift", "-n", ns, "--set", "serve.namespaces={"+ns+","+hrNS+"}",
		"--set", "viewer.subjects[0].kind=ServiceAccount,viewer.subjects[0].name=viewer,viewer.subjects[0].namespace="+ns,
		"--set", "scraper.subjects[0].kind=ServiceAccount,scraper.subjects[0].name=viewer,scraper.subjects[0].namespace="+ns)
	t.Cleanup(func() { h.run(t, false, nil, "uninstall", "console", "-n", ns) })
	own, err := kc.CoreV1().ServiceAccounts(ns).CreateToken(kctx, "console-helm-drift", &authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	viewer := saToken(t, kc, ns, "viewer")
	p := startServe(t, tokenKubeconfig(t, cluster.Config.Host, own.Status.Token), "--namespaces="+ns+","+hrNS,
		"--scraper-role=console-helm-drift-scraper", "--viewer-role=console-helm-drift-viewer", "--external-url=https://drift.example.com")
	trustServed(t, p)

	// The report the page must agree with: serve's own, and diff's for the release.
	var report struct {
		Releases []struct {
			Release, Namespace, HelmRelease string
			Divergences                     int
			Counts                          map[string]int
		} `json:"releases"`
	}
	testenv.Eventually(t, 90*time.Second, "a run that sees the edits", func() (bool, string) {
		code, body, _ := p.scrape(t, "/report", viewer)
		if code != 200 {
			return false, fmt.Sprintf("%d %s\n%s", code, body, p.log())
		}
		report.Releases = nil
		if err := json.Unmarshal([]byte(body), &report); err != nil {
			return false, err.Error()
		}
		for _, r := range report.Releases {
			if r.HelmRelease == "" && r.Namespace == ns && r.Counts["CHART-ONLY"] > 0 {
				return true, ""
			}
		}
		return false, body
	})

	// Not signed in: the sign-in page. Signed in: the table.
	if err := chromedp.Do(ctx, chromedp.Navigate(p.url+"/"), chromedp.WaitVisible(chromedp.ID("token"))); err != nil {
		t.Fatalf("the console without a token: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	if title != "helm-drift: sign in" {
		t.Errorf("without a token: page %q, want the sign-in page", title)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("token"), viewer), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("releases"))); err != nil {
		t.Fatalf("signing in: %v", err)
	}
	type tableRow struct{ NS, Name, Kind, Differs, ChartOnly, ClusterOnly, Shadows string }
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]tableRow](`Array.from(document.querySelectorAll("#releases tbody tr")).map(r => ({NS: r.cells[0].textContent,
		Name: r.cells[1].textContent, Kind: r.cells[2].textContent, Differs: r.cells[3].textContent, ChartOnly: r.cells[4].textContent,
		ClusterOnly: r.cells[5].textContent, Shadows: r.cells[6].textContent}))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(report.Releases) {
		t.Errorf("the table has %d rows, /report %d releases: %+v", len(rows), len(report.Releases), rows)
	}
	chartOnly := 0
	for _, r := range report.Releases {
		ns, name, kind := r.Namespace, r.Release, "Helm release"
		if r.HelmRelease != "" {
			ns, name, _ = strings.Cut(r.HelmRelease, "/")
			kind = "HelmRelease"
		}
		if r.Counts["CHART-ONLY"] > 0 {
			chartOnly++
		}
		found := false
		for _, row := range rows {
			if row.NS == ns && row.Name == name && row.Kind == kind {
				found = true
				if row.Differs != fmt.Sprint(r.Counts["DIFFERS"]) || row.ChartOnly != fmt.Sprint(r.Counts["CHART-ONLY"]) ||
					row.ClusterOnly != fmt.Sprint(r.Counts["CLUSTER-ONLY"]) || row.Shadows != fmt.Sprint(r.Counts["SHADOWS"]) {
					t.Errorf("%s %s/%s: the table's counts %+v, /report's %v", kind, ns, name, row, r.Counts)
				}
			}
		}
		if !found {
			t.Errorf("%s %s/%s of /report is not in the table", kind, ns, name)
		}
	}
	screenshot(t, ctx, "console-table")
	consoleHistory(t, ctx, p, viewer, ns)

	// Filtering by class narrows the table.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("f-class"), "CHART-ONLY")); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.getElementById("f-class").dispatchEvent(new Event("change")); document.querySelectorAll("#releases tbody tr:not(.hidden)").length`))
	if err != nil {
		t.Fatal(err)
	}
	if shown != chartOnly || shown >= len(rows) {
		t.Errorf("filtered by CHART-ONLY: %d rows shown, want %d of %d", shown, chartOnly, len(rows))
	}

	// A click opens the release: its rows are diff release -o json's, its hunks -o diff's.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#releases a[href="/release/`+ns+`/web"]`)), chromedp.WaitVisible(chromedp.CSS("section.release"))); err != nil {
		t.Fatalf("opening the release: %v", err)
	}
	pageRows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("section.release table.rows tbody tr")).map(r => r.cells[0].textContent + " " + r.cells[1].textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, _ := diffBinary(t, "release", "web", "-n", ns, "--normalize", "offline", "-o", "json", "--kubeconfig", cluster.Kubeconfig)
	var rep struct {
		Objects []struct {
			Divergences []struct{ Class, Path string } `json:"divergences"`
		} `json:"objects"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("diff release -o json: %v\n%s%s", err, out, errOut)
	}
	var want []string
	for _, o := range rep.Objects {
		for _, d := range o.Divergences {
			want = append(want, d.Class+" "+d.Path)
		}
	}
	sort.Strings(want)
	flags := regexp.MustCompile(` \((?:inert|pending deletion|unstable)(?:, (?:inert|pending deletion|unstable))*\)$`)
	got := make([]string, len(pageRows))
	for i, r := range pageRows {
		got[i] = flags.ReplaceAllString(r, "") // the flags after the path: (inert), ...
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the release page's rows:\n%s\nwant diff release -o json's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The release's history: every row of the page an open divergence, since serve's runs.
	timeline, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("section.timeline table.rows tbody tr")).map(r => r.cells[0].textContent + " " + r.cells[3].textContent + " " + r.cells[2].textContent + " " + (r.cells[4].textContent ? "since" : "no since"))`))
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, r := range timeline {
		if strings.HasPrefix(r, "open ") {
			open = append(open, strings.TrimSuffix(strings.TrimPrefix(r, "open "), " since"))
		}
		if strings.HasSuffix(r, "no since") {
			t.Errorf("a divergence of the history without its first-seen time: %s", r)
		}
	}
	sort.Strings(open)
	if strings.Join(open, "\n") != strings.Join(want, "\n") {
		t.Errorf("the release page's history, open divergences:\n%s\nwant its rows:\n%s", strings.Join(open, "\n"), strings.Join(want, "\n"))
	}
	// Each diff is rendered when opened (its toggle event, after the click).
	opened, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("details.lazy > summary").forEach(s => s.click()); document.querySelectorAll("details.lazy").length`))
	if err != nil {
		t.Fatal(err)
	}
	var hunks []string
	testenv.Eventually(t, 10*time.Second, "the opened diffs rendered", func() (bool, string) {
		hunks, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`document.querySelectorAll("details.lazy template").length > 0 ? [] :
			Array.from(document.querySelectorAll("details.lazy pre span.hh")).map(s => s.textContent).filter(s => s.startsWith("@@"))`))
		return err == nil && len(hunks) > 0, fmt.Sprint(err)
	})
	if opened == 0 {
		t.Errorf("the release page has no diff to open")
	}
	diffOut, _, _ := diffBinary(t, "release", "web", "-n", ns, "--normalize", "offline", "-o", "diff", "--kubeconfig", cluster.Kubeconfig)
	var wantHunks []string
	for _, l := range strings.Split(diffOut, "\n") {
		if strings.HasPrefix(l, "@@") {
			wantHunks = append(wantHunks, l)
		}
	}
	if strings.Join(hunks, "\n") != strings.Join(wantHunks, "\n") || len(hunks) == 0 {
		t.Errorf("the release page's hunks:\n%s\nwant -o diff's:\n%s", strings.Join(hunks, "\n"), strings.Join(wantHunks, "\n"))
	}
	dom, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		t.Fatal(err)
	}
	permalink, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("header a").href`))
	if err != nil {
		t.Fatal(err)
	}
	if permalink != "https://drift.example.com/release/"+ns+"/web" {
		t.Errorf("the release page's link: %q", permalink)
	}
	for _, leak := range []string{marker, "Q09OU09MRS1TRUNSRVQtTUFSS0VS"} {
		if strings.Contains(dom, leak) {
			t.Errorf("a Secret's value is in the DOM")
		}
	}
	if !strings.Contains(dom, "(redacted") {
		t.Errorf("the Secret's changed key is not shown redacted:\n%.3000s", dom)
	}
	screenshot(t, ctx, "console-release")

	// The same report as one file (-o html): the same rows, offline.
	htmlOut, errOut, code := diffBinary(t, "release", "web", "-n", ns, "--normalize", "offline", "-o", "html", "--kubeconfig", cluster.Kubeconfig)
	if code != 2 || !strings.HasPrefix(htmlOut, "<!DOCTYPE html>") {
		t.Fatalf("diff release -o html: exit %d\n%.300s%s", code, htmlOut, errOut)
	}
	file := filepath.Join(t.TempDir(), "web.html")
	if err := os.WriteFile(file, []byte(htmlOut), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.CSS("section.release"))); err != nil {
		t.Fatal(err)
	}
	fileRows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("section.release table.rows tbody tr")).map(r => r.cells[0].textContent + " " + r.cells[1].textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range fileRows {
		fileRows[i] = flags.ReplaceAllString(r, "")
	}
	sort.Strings(fileRows)
	if strings.Join(fileRows, "\n") != strings.Join(want, "\n") {
		t.Errorf("-o html opened from a file: rows\n%s\nwant\n%s", strings.Join(fileRows, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(htmlOut, marker) {
		t.Errorf("-o html holds a Secret's value")
	}

	// The HelmRelease's page says what its next reconcile does.
	if err := chromedp.Do(ctx, chromedp.Navigate(p.url+"/helmrelease/"+hrNS+"/web"), chromedp.WaitVisible(chromedp.CSS("section.release"))); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("section.release")))
	if err != nil {
		t.Fatal(err)
	}
	// helm-controller may have upgraded already (its own reconcile of the values edit, racing
	// with serve's run): the page then says so, revision 2, nothing left to upgrade.
	upgradeNext := strings.Contains(text, "next reconcile: upgrade")
	upgraded := strings.Contains(text, "revision 2 ") && strings.Contains(text, "next reconcile: drift correction")
	if !upgradeNext && !upgraded || strings.Contains(text, marker) {
		t.Errorf("the HelmRelease's page:\n%s", text)
	}
}

// consoleHistory drives the console's memory of drift in the browser: release late drifts
// after web (by kubectl-scale), so the table sorted by "Drifting since" puts web first
// ascending and late first descending; then late's drift is fixed and made again, and its
// release page's history shows the divergence open, resolved, then open again with one return.
// It leaves the browser on the table, filters cleared.
func consoleHistory(t *testing.T, ctx context.Context, p *serveProcess, viewer, ns string) {
	t.Helper()
	kc, kctx := cluster.Kube, context.Background()
	scale := func(replicas int) {
		t.Helper()
		if _, err := kc.AppsV1().Deployments(ns).Patch(kctx, "late", types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)),
			metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
			t.Fatal(err)
		}
	}
	// since waits for a run in which late drifts (or not) and returns web's and late's "since".
	since := func(drifting bool) (web, late string) {
		t.Helper()
		testenv.Eventually(t, 60*time.Second, fmt.Sprintf("a run in which release late drifting is %v", drifting), func() (bool, string) {
			code, body, _ := p.scrape(t, "/report", viewer)
			var report struct {
				Releases []struct {
					Release, Namespace, HelmRelease, Since string
					Divergences                            int
				} `json:"releases"`
			}
			if code != 200 || json.Unmarshal([]byte(body), &report) != nil {
				return false, fmt.Sprintf("%d %s", code, body)
			}
			web, late = "", ""
			seen := false
			for _, r := range report.Releases {
				if r.Namespace != ns || r.HelmRelease != "" {
					continue
				}
				switch r.Release {
				case "web":
					web = r.Since
				case "late":
					late, seen = r.Since, (r.Divergences > 0) == drifting
				}
			}
			return seen && web != "" && (late != "") == drifting, body
		})
		return web, late
	}

	// A run has seen late clean (the caller waited for one after the edits); now it drifts.
	scale(4)
	webSince, lateSince := since(true)
	if lateSince <= webSince {
		t.Fatalf("release late drifted after web, yet its since %s is not after web's %s", lateSince, webSince)
	}
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("releases"))); err != nil {
		t.Fatal(err)
	}
	// order clicks the "Drifting since" header and reads web's and late's rows as name@since.
	order := func() []string {
		t.Helper()
		names, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(function() {
			var b = Array.from(document.querySelectorAll("#releases thead button")).find(b => b.textContent === "Drifting since");
			b.click();
			var col = b.parentNode.cellIndex;
			return Array.from(document.querySelectorAll("#releases tbody tr")).filter(r => r.dataset.ns === `+fmt.Sprintf("%q", ns)+`).map(r => r.cells[1].textContent + "@" + r.cells[col].textContent);
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	// Both ways, the releases that do not drift (the console's own) come last.
	for _, want := range [][]string{{"web@" + webSince, "late@" + lateSince}, {"late@" + lateSince, "web@" + webSince}} {
		got := order()
		if len(got) < 2 || !slices.Equal(got[:2], want) || slices.ContainsFunc(got[2:], func(r string) bool { return !strings.HasSuffix(r, "@") }) {
			t.Errorf("the table sorted by since: %v, want %v first, then the releases without drift", got, want)
		}
	}
	screenshot(t, ctx, "console-since")

	// Fixed, then moved again: one divergence, resolved and come back.
	scale(2)
	since(false)
	scale(3)
	since(true)
	if err := chromedp.Do(ctx, chromedp.Navigate(p.url+"/release/"+ns+"/late"), chromedp.WaitVisible(chromedp.CSS("section.timeline"))); err != nil {
		t.Fatal(err)
	}
	entries, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`Array.from(document.querySelectorAll("section.timeline table.rows tbody tr")).map(r => Array.from(r.cells).map(c => c.textContent))`))
	if err != nil {
		t.Fatal(err)
	}
	// State, Object, Field, Class, Since, Last seen, Resolved, Returns, Moved by.
	if len(entries) != 1 || len(entries[0]) != 9 {
		t.Fatalf("release late's history: %v, want one divergence", entries)
	}
	e := entries[0]
	if e[0] != "open" || e[1] != "Deployment.apps "+ns+"/late" || e[2] != "spec.replicas" ||
		e[4] != lateSince || e[6] != "" || e[7] != "1" || !strings.HasPrefix(e[8], "kubectl-scale at ") {
		t.Errorf("release late's history after drift, fix and drift again: %q\nwant open, spec.replicas, since %s, not resolved, 1 return, moved by kubectl-scale", e, lateSince)
	}
	screenshot(t, ctx, "console-history")
	if err := chromedp.Do(ctx, chromedp.NavigateBack(), chromedp.WaitVisible(chromedp.ID("releases"))); err != nil {
		t.Fatal(err)
	}
}
