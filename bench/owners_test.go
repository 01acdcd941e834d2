package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/helm-drift/helm-drift/internal/testenv"
)

// ownersStream is one stream the owners check is measured on.
type ownersStream struct {
	name string
	yaml []byte
	crds int
}

// corpusStreams renders every chart of ../shared/corpus with the real helm v3, CRDs included
// (--include-crds), as the check meets them in `helm install --post-renderer`. Skipped (nil)
// when the corpus is absent.
func corpusStreams(t *testing.T) []ownersStream {
	t.Helper()
	dir, charts, ok := testenv.Corpus(t)
	if !ok {
		t.Logf("corpus: %s not found (it sits beside the checkout in CI): only the synthetic stream is measured", dir)
		return nil
	}
	helm, err := toolBinary("helm3")
	if err != nil {
		t.Fatal(err)
	}
	var streams []ownersStream
	for _, c := range charts {
		args := append([]string{"template", c.Release, filepath.Join(dir, c.Path), "-n", c.Namespace, "--include-crds", "--kube-version", "1.37.0"}, c.Args...)
		cmd := exec.Command(helm, args...)
		cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_CACHE_HOME="+t.TempDir())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		y, err := cmd.Output()
		if err != nil {
			t.Fatalf("helm template %s: %v\n%s", c.Path, err, stderr.Bytes())
		}
		streams = append(streams, ownersStream{name: c.Path, yaml: y, crds: bytes.Count(y, []byte("\nkind: CustomResourceDefinition"))})
	}
	return streams
}

// cpuOf runs `helm-drift render` on stream and returns the CPU time (user + system) of the
// process, start included: what Helm pays for its post-renderer.
func cpuOf(t *testing.T, bin string, stream []byte, owners string) time.Duration {
	t.Helper()
	cmd := exec.Command(bin, "render", "--owners="+owners, "-n", "bench")
	cmd.Stdin = bytes.NewReader(stream)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm-drift render --owners=%s: %v\n%s", owners, err, stderr.Bytes())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestOwnersCompare prints, with -compare (make bench), what the second-owner check adds to
// render as a process, on every corpus chart rendered with its CRDs and on the synthetic
// stream: the median CPU time of paired runs with --owners off and with the default check,
// and their ratio (the target: at most 1.2x).
func TestOwnersCompare(t *testing.T) {
	if !*compare {
		t.Skip("run with -compare (make bench)")
	}
	const pairs = 15
	bin := helmDriftBinary(t)
	streams := corpusStreams(t)
	synthetic := benchStream(benchDocs)
	streams = append(streams, ownersStream{name: fmt.Sprintf("synthetic (%d documents)", synthetic.Docs), yaml: synthetic.YAML})
	median := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	fmt.Printf("\nsecond-owner check, render as a process: median CPU (user+system) of %d paired runs\n", pairs)
	fmt.Printf("%-28s %10s %5s %14s %14s %8s\n", "stream", "bytes", "CRDs", "--owners off", "default check", "ratio")
	worst, worstName := 0.0, ""
	var offAll, onAll time.Duration
	for _, s := range streams {
		var off, on []time.Duration
		for range pairs {
			off = append(off, cpuOf(t, bin, s.yaml, "off"))
			on = append(on, cpuOf(t, bin, s.yaml, "error"))
		}
		mOff, mOn := median(off), median(on)
		offAll, onAll = offAll+mOff, onAll+mOn
		ratio := float64(mOn) / float64(mOff)
		if ratio > worst {
			worst, worstName = ratio, s.name
		}
		fmt.Printf("%-28s %10d %5d %12.1fms %12.1fms %7.2fx\n", s.name, len(s.yaml), s.crds, ms(mOff), ms(mOn), ratio)
	}
	fmt.Printf("all streams: %.2fx; the largest ratio %.2fx (%s); target at most 1.20x\n", float64(onAll)/float64(offAll), worst, worstName)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
