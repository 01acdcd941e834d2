package linediff

import (
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
)

// apply replays ops on x and reports whether they cover both sides in order and give y.
func apply(t *testing.T, ops []Op, x, y []string) {
	t.Helper()
	var got []string
	i, j := 0, 0
	for _, o := range ops {
		if o.I1 != i || o.J1 != j || o.I2 < o.I1 || o.J2 < o.J1 {
			t.Fatalf("op %c %d:%d %d:%d does not continue at %d, %d", o.Tag, o.I1, o.I2, o.J1, o.J2, i, j)
		}
		switch o.Tag {
		case Equal:
			if !slices.Equal(x[o.I1:o.I2], y[o.J1:o.J2]) {
				t.Fatalf("equal %d:%d %d:%d differs", o.I1, o.I2, o.J1, o.J2)
			}
			got = append(got, x[o.I1:o.I2]...)
		case Delete, Insert, Replace:
			got = append(got, y[o.J1:o.J2]...)
		default:
			t.Fatalf("tag %q", o.Tag)
		}
		i, j = o.I2, o.J2
	}
	if i != len(x) || j != len(y) || !slices.Equal(got, y) {
		t.Fatalf("ops end at %d, %d of %d, %d; replayed %q, want %q", i, j, len(x), len(y), got, y)
	}
}

// lcs is the length of a longest common subsequence, by dynamic programming.
func lcs(x, y []string) int {
	prev, cur := make([]int, len(y)+1), make([]int, len(y)+1)
	for i := range x {
		for j := range y {
			if x[i] == y[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(y)]
}

func random(r *rand.Rand, n, alphabet int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(r.Intn(alphabet))
	}
	return out
}

// TestDiffReplays: on random lists with many repeated lines, the script turns x into y; where
// no line is unique (Myers alone), it keeps a longest common subsequence: the shortest script.
func TestDiffReplays(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for n := 0; n < 2000; n++ {
		x, y := random(r, r.Intn(30), 1+r.Intn(8)), random(r, r.Intn(30), 1+r.Intn(8))
		apply(t, Diff(x, y), x, y)
		d := &differ{a: toInts(x), b: toInts(y)}
		d.myers(0, len(x), 0, len(y))
		if got, want := len(d.matches), lcs(x, y); got != want {
			t.Fatalf("myers %q -> %q: %d lines kept, want %d", x, y, got, want)
		}
		apply(t, d.ops(), x, y)
	}
}

func toInts(lines []string) []int {
	out := make([]int, len(lines))
	for i, l := range lines {
		out[i], _ = strconv.Atoi(l)
	}
	return out
}

// TestOneChangedProperty: in a schema of many properties of one shape, a changed property is
// its own lines: the script keeps every other line.
func TestOneChangedProperty(t *testing.T) {
	var x []string
	for i := range 2000 {
		x = append(x, "  prop"+strconv.Itoa(i)+":", "    description: the property", "    type: string")
	}
	y := slices.Clone(x)
	y[3*700+2] = "    type: integer"
	ops := Diff(x, y)
	apply(t, ops, x, y)
	var changed []Op
	for _, o := range ops {
		if o.Tag != Equal {
			changed = append(changed, o)
		}
	}
	if len(changed) != 1 || changed[0] != (Op{Replace, 2102, 2103, 2102, 2103}) {
		t.Errorf("changes %v, want the one line replaced", changed)
	}
}

// TestGroupAsDifflib: Group cuts difflib's own opcodes into the hunks difflib cuts them into.
func TestGroupAsDifflib(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for n := 0; n < 500; n++ {
		x, y := random(r, r.Intn(40), 3), random(r, r.Intn(40), 3)
		var ops []Op
		for _, c := range difflib.NewMatcherWithJunk(x, y, false, nil).GetOpCodes() {
			ops = append(ops, Op{c.Tag, c.I1, c.I2, c.J1, c.J2})
		}
		for _, ctx := range []int{0, 1, 3} {
			// A matcher of its own each time: GetGroupedOpCodes changes the opcodes it caches.
			m := difflib.NewMatcherWithJunk(x, y, false, nil)
			var want [][]Op
			for _, g := range m.GetGroupedOpCodes(ctx) {
				var group []Op
				for _, c := range g {
					group = append(group, Op{c.Tag, c.I1, c.I2, c.J1, c.J2})
				}
				want = append(want, group)
			}
			if got := Group(ops, ctx); !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("%q -> %q, context %d:\n%v\nwant\n%v", strings.Join(x, ""), strings.Join(y, ""), ctx, got, want)
			}
		}
	}
}
