package bench

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/helm-drift/helm-drift/internal/manifest"
	"github.com/helm-drift/helm-drift/internal/owners"
	"github.com/helm-drift/helm-drift/internal/pipeline"
	"github.com/helm-drift/helm-drift/internal/transform"
)

var (
	compare       = flag.Bool("compare", false, "run helm-drift render, a kyaml round trip and kustomize build on one stream and print the ratios")
	kustomizeDocs = flag.Int("kustomize-docs", 1000, "documents in the stream kustomize build is compared on; its cost grows faster than linearly (1,000: ~4 s, 3,000: ~53 s here), so the full 12,000 takes many minutes")
)

const (
	benchDocs     = 12000
	benchReleases = 100
	benchSelected = 10
)

var (
	streamsMu sync.Mutex
	streams   = map[int]Stream{}
)

// benchStream is the generated stream of docs documents (benchReleases HelmReleases, of which
// benchSelected are selected), made once per size.
func benchStream(docs int) Stream {
	streamsMu.Lock()
	defer streamsMu.Unlock()
	s, ok := streams[docs]
	if !ok {
		s = Generate(docs, benchReleases, benchSelected)
		streams[docs] = s
	}
	return s
}

func renderer(tb testing.TB) *pipeline.Renderer {
	rule, err := transform.ParseFlagRule("label:" + SelectedLabel + "=enabled")
	if err != nil {
		tb.Fatal(err)
	}
	return &pipeline.Renderer{Transforms: []transform.Transform{&transform.DriftDetection{Rules: []transform.Rule{rule}, Namespace: "default"}}}
}

// ownersCheck is the second-owner stream check as render runs it (--owners error).
func ownersCheck(s *manifest.Stream) error {
	objs, err := manifest.Objects(s)
	if err != nil {
		return err
	}
	fs, err := owners.NewChecker(objs, owners.Options{Namespace: "default"}).Stream(objs)
	if err != nil {
		return err
	}
	if len(fs) > 0 {
		return fmt.Errorf("%d findings on a stream that has none: %s", len(fs), fs[0].Message)
	}
	return nil
}

// BenchmarkRenderWithOwners is render with the second-owner check, its default.
func BenchmarkRenderWithOwners(b *testing.B) {
	r := renderer(b)
	r.Checks = append(r.Checks, ownersCheck)
	benchRenderWith(b, r, benchStream(benchDocs))
}

// BenchmarkRender is helm-drift's post-renderer on the whole stream.
func BenchmarkRender(b *testing.B) { benchRender(b, benchStream(benchDocs)) }

func benchRender(b *testing.B, s Stream) { benchRenderWith(b, renderer(b), s) }

func benchRenderOwners(b *testing.B, s Stream) {
	r := renderer(b)
	r.Checks = append(r.Checks, ownersCheck)
	benchRenderWith(b, r, s)
}

func benchRenderWith(b *testing.B, r *pipeline.Renderer, s Stream) {
	b.SetBytes(int64(len(s.YAML)))
	b.ReportAllocs()
	for b.Loop() {
		out, err := r.Render(s.YAML)
		if err != nil {
			b.Fatal(err)
		}
		if got := bytes.Count(out, []byte("driftDetection:")); got != benchSelected {
			b.Fatalf("%d HelmReleases changed, want %d", got, benchSelected)
		}
	}
}

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// helmDriftBinary builds bin/helm-drift once into a temporary directory.
func helmDriftBinary(tb testing.TB) string {
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "helm-drift-bench-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "helm-drift")
		if out, err := exec.Command("go", "build", "-o", binaryPath, "../cmd/helm-drift").CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		tb.Fatal(binaryErr)
	}
	return binaryPath
}

// benchProcess runs the helm-drift binary as Helm would: the stream on stdin, the result on
// stdout, process start included.
func benchProcess(b *testing.B, s Stream, owners string) {
	bin := helmDriftBinary(b)
	b.SetBytes(int64(len(s.YAML)))
	for b.Loop() {
		cmd := exec.Command(bin, "render", "--owners="+owners, "--drift-detection=label:"+SelectedLabel+"=enabled")
		cmd.Stdin = bytes.NewReader(s.YAML)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("helm-drift render: %v", err)
		}
		if got := bytes.Count(out, []byte("driftDetection:")); got != benchSelected {
			b.Fatalf("%d HelmReleases changed, want %d", got, benchSelected)
		}
	}
}

// BenchmarkRenderProcess is `helm-drift render --owners=off` as a process.
func BenchmarkRenderProcess(b *testing.B) { benchProcess(b, benchStream(benchDocs), "off") }

// BenchmarkRenderProcessWithOwners is `helm-drift render` as a process, its owners check on.
func BenchmarkRenderProcessWithOwners(b *testing.B) {
	benchProcess(b, benchStream(benchDocs), "error")
}

// BenchmarkKyamlRoundTrip parses every document with kyaml and writes them all back: what a
// post-renderer that goes through kio for the whole stream pays before doing anything.
func BenchmarkKyamlRoundTrip(b *testing.B) { benchKyaml(b, benchStream(benchDocs)) }

func benchKyaml(b *testing.B, s Stream) {
	b.SetBytes(int64(len(s.YAML)))
	b.ReportAllocs()
	for b.Loop() {
		nodes, err := kio.FromBytes(s.YAML)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := kio.StringAll(nodes); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKustomizeBuild runs `kustomize build` with a patch that adds the same
// driftDetection to the same HelmReleases (the post-renderer a user writes by hand), on a
// stream of -kustomize-docs documents.
func BenchmarkKustomizeBuild(b *testing.B) { benchKustomize(b, benchStream(*kustomizeDocs)) }

func benchKustomize(b *testing.B, s Stream) {
	bin := kustomizeBinary(b)
	dir := b.TempDir()
	writeKustomization(b, dir, s.YAML)
	b.SetBytes(int64(len(s.YAML)))
	for b.Loop() {
		out, err := exec.Command(bin, "build", dir).Output()
		if err != nil {
			b.Fatalf("kustomize build: %v", err)
		}
		if got := bytes.Count(out, []byte("driftDetection:")); got != benchSelected {
			b.Fatalf("kustomize changed %d HelmReleases, want %d", got, benchSelected)
		}
	}
}

func kustomizeBinary(tb testing.TB) string {
	tb.Helper()
	bin, err := toolBinary("kustomize")
	if err != nil {
		tb.Skipf("kustomize not available (%v)", err)
	}
	return bin
}

// toolBinary is the real tool name (helm3, helm4, kustomize) scripts/tools.sh builds, built
// once into its cache.
func toolBinary(name string) (string, error) {
	out, err := exec.Command("bash", "../scripts/tools.sh", name).Output()
	if err != nil {
		return "", fmt.Errorf("scripts/tools.sh %s: %w", name, err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), name), nil
}

func writeKustomization(tb testing.TB, dir string, stream []byte) {
	tb.Helper()
	k := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [stream.yaml]
patches:
  - target: {kind: HelmRelease, labelSelector: "` + SelectedLabel + `"}
    patch: |
      - op: add
        path: /spec/driftDetection
        value: {mode: enabled}
`
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stream.yaml"), stream, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// TestRenderAllocations: rendering the benchmark stream allocates less than three times its
// size (untouched documents are never parsed or copied one by one). Bytes, not time.
func TestRenderAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 10 MB stream")
	}
	s := benchStream(benchDocs)
	res := testing.Benchmark(BenchmarkRender)
	if res.N == 0 {
		t.Fatal("the benchmark did not run")
	}
	ratio := float64(res.AllocedBytesPerOp()) / float64(len(s.YAML))
	t.Logf("render of %d documents, %.1f MB: %.2f x the input allocated", s.Docs, float64(len(s.YAML))/1e6, ratio)
	if ratio >= 3 {
		t.Errorf("render allocated %.2f x its input (%d bytes for %d), want under 3 x", ratio, res.AllocedBytesPerOp(), len(s.YAML))
	}
}

// TestCompare prints, with -compare, the three ways side by side (make bench): render and
// the kyaml round trip on the full stream, and all three on the -kustomize-docs stream, each
// with its ratio to render on the same stream.
func TestCompare(t *testing.T) {
	if !*compare {
		t.Skip("run with -compare (make bench)")
	}
	type way struct {
		name     string
		fn       func(*testing.B, Stream)
		external bool // runs in another process: its allocations are not counted here
	}
	render := way{"helm-drift render", benchRender, false}
	withOwners := way{"render + owners check", benchRenderOwners, false}
	kyaml := way{"kyaml ParseAll+StringAll", benchKyaml, false}
	kust := way{"kustomize build + patch", benchKustomize, true}
	process := way{"render, as a process", func(b *testing.B, s Stream) { benchProcess(b, s, "off") }, true}
	processOwners := way{"  + owners, as a process", func(b *testing.B, s Stream) { benchProcess(b, s, "error") }, true}
	sizes := []struct {
		docs int
		ways []way
	}{{benchDocs, []way{render, withOwners, process, processOwners, kyaml}}, {*kustomizeDocs, []way{render, withOwners, kyaml, kust}}}
	if *kustomizeDocs == benchDocs {
		sizes = sizes[1:]
	}
	for _, size := range sizes {
		s := benchStream(size.docs)
		mb := float64(len(s.YAML)) / 1e6
		fmt.Printf("\nstream: %d documents, %.1f MB, %d HelmReleases, %d selected\n", s.Docs, mb, benchReleases, benchSelected)
		fmt.Printf("%-26s %12s %10s %12s %11s\n", "", "time/op", "MB/s", "alloc/input", "vs render")
		var base float64
		for i, w := range size.ways {
			res := testing.Benchmark(func(b *testing.B) { w.fn(b, s) })
			if res.N == 0 {
				fmt.Printf("%-26s %12s\n", w.name, "skipped")
				continue
			}
			perOp := float64(res.T.Nanoseconds()) / float64(res.N)
			if i == 0 {
				base = perOp
			}
			alloc := "(process)"
			if !w.external {
				alloc = fmt.Sprintf("%.2fx", float64(res.AllocedBytesPerOp())/float64(len(s.YAML)))
			}
			fmt.Printf("%-26s %10.1fms %10.1f %12s %10.1fx\n", w.name, perOp/1e6, mb/(perOp/1e9), alloc, perOp/base)
		}
	}
}
