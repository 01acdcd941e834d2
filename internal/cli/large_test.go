package cli

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// docReader streams generated ConfigMap documents until n bytes.
type docReader struct {
	n, i int
	buf  bytes.Buffer
}

func (r *docReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	for r.buf.Len() < len(p) && r.buf.Len() < r.n {
		fmt.Fprintf(&r.buf, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%08d\ndata:\n  payload: %s\n", r.i, strings.Repeat("x", 400))
		r.i++
	}
	k := min(len(p), r.buf.Len(), r.n)
	copy(p, r.buf.Next(k))
	r.n -= k
	return k, nil
}

// TestLargeInput: a 100 MB stream renders, unchanged, with bounded memory; a stream over the
// 256 MiB limit is refused with a message naming the limit, and nothing on stdout.
func TestLargeInput(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB stream")
	}
	const size = 100 << 20
	var out, errOut bytes.Buffer
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if code := Run([]string{"render", "--owners=off"}, &docReader{n: size}, &out, &errOut); code != 0 {
		t.Fatalf("100 MB: exit %d: %s", code, errOut.String())
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if out.Len() != size {
		t.Errorf("100 MB in, %d bytes out", out.Len())
	}
	// Input and output are held once each; the transform's own allocations stay under 3x (see
	// TestRenderAllocations); this bounds the total.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*size {
		t.Errorf("rendering 100 MB allocated %d MB", alloc>>20)
	}
	t.Logf("100 MB rendered; %d MB allocated", (after.TotalAlloc-before.TotalAlloc)>>20)

	out.Reset()
	errOut.Reset()
	if code := Run([]string{"render"}, &docReader{n: MaxInput + 1024}, &out, &errOut); code != 1 || out.Len() != 0 ||
		!strings.Contains(errOut.String(), "256 MiB") {
		t.Errorf("over the limit: exit %d, %d bytes on stdout, stderr %q", code, out.Len(), errOut.String())
	}
}
