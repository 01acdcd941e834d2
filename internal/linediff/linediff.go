// Package linediff finds the edits that turn one list of lines into another, in time about
// linear in the lines and the size of the change, for the line views of objects of any size
// (a CRD's schema of twenty thousand lines).
//
// It is a patience diff, as git's --patience and Go's own internal/diff: the lines each side
// holds exactly once anchor the match (their longest common subsequence, found by patience
// sorting in O(n log n)), and each gap between two anchors is diffed again the same way, its
// own unique lines anchoring it. A gap without unique lines is diffed by Myers' O(ND)
// algorithm in linear space (its middle snake), which finds a shortest edit script. Unique
// lines of YAML are its keys and values; repeated ones (type: string, description: ...,
// closing items) are never used to align unrelated blocks, so a changed property shows as its
// own lines, and a schema of many properties of one shape costs what its changes cost, not the
// cube of its length (go-difflib's SequenceMatcher, which this replaces, looked at every
// occurrence of every repeated line at every level of its recursion).
package linediff

import "sort"

// The tags of an Op, as difflib's opcodes name them.
const (
	Equal   = 'e'
	Delete  = 'd'
	Insert  = 'i'
	Replace = 'r'
)

// An Op is one run of an edit script: x[I1:I2] is kept as y[J1:J2] (Equal), removed (Delete),
// replaced by y[J1:J2] (Replace), or y[J1:J2] is added at x[I1] (Insert).
type Op struct {
	Tag            byte
	I1, I2, J1, J2 int
}

// Diff returns the edit script that turns x into y: its runs in order, covering both sides,
// with adjacent removals and additions joined into one Replace.
func Diff(x, y []string) []Op {
	// Lines as numbers: equal lines, equal numbers, so that the work below compares ints.
	ids := map[string]int{}
	num := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	d := &differ{a: num(x), b: num(y)}
	d.diff(0, len(d.a), 0, len(d.b))
	return d.ops()
}

// differ collects the matched line pairs of a and b, in order.
type differ struct {
	a, b    []int
	matches [][2]int
}

// diff matches a[alo:ahi] with b[blo:bhi].
func (d *differ) diff(alo, ahi, blo, bhi int) {
	alo, ahi, blo, bhi, tail := d.trim(alo, ahi, blo, bhi)
	defer d.untrim(tail)
	if alo < ahi && blo < bhi {
		if anchors := d.anchors(alo, ahi, blo, bhi); len(anchors) > 0 {
			i, j := alo, blo
			for _, an := range anchors {
				d.diff(i, an[0], j, an[1])
				d.matches = append(d.matches, an)
				i, j = an[0]+1, an[1]+1
			}
			d.diff(i, ahi, j, bhi)
		} else {
			d.myers(alo, ahi, blo, bhi)
		}
	}
}

// trim matches the equal lines at both ends of a[alo:ahi] and b[blo:bhi]: those at the start
// at once, those at the end returned (last first) for untrim to match after what lies between.
func (d *differ) trim(alo, ahi, blo, bhi int) (int, int, int, int, [][2]int) {
	for alo < ahi && blo < bhi && d.a[alo] == d.b[blo] {
		d.matches = append(d.matches, [2]int{alo, blo})
		alo, blo = alo+1, blo+1
	}
	var tail [][2]int
	for alo < ahi && blo < bhi && d.a[ahi-1] == d.b[bhi-1] {
		ahi, bhi = ahi-1, bhi-1
		tail = append(tail, [2]int{ahi, bhi})
	}
	return alo, ahi, blo, bhi, tail
}

// untrim matches the lines trim left at the end, in order.
func (d *differ) untrim(tail [][2]int) {
	for k := len(tail) - 1; k >= 0; k-- {
		d.matches = append(d.matches, tail[k])
	}
}

// anchors returns the longest common subsequence of the lines that a[alo:ahi] and b[blo:bhi]
// each hold exactly once, as pairs of indexes in order (patience sorting).
func (d *differ) anchors(alo, ahi, blo, bhi int) [][2]int {
	type count struct{ a, b, ai, bi int }
	counts := map[int]*count{}
	for i := alo; i < ahi; i++ {
		c := counts[d.a[i]]
		if c == nil {
			c = &count{}
			counts[d.a[i]] = c
		}
		c.a++
		c.ai = i
	}
	for j := blo; j < bhi; j++ {
		if c := counts[d.b[j]]; c != nil {
			c.b++
			c.bi = j
		}
	}
	var pairs [][2]int // unique in both, in the order of a
	for i := alo; i < ahi; i++ {
		if c := counts[d.a[i]]; c.a == 1 && c.b == 1 {
			pairs = append(pairs, [2]int{c.ai, c.bi})
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	// The longest run of pairs increasing in b: patience sorting, each pile's top the smallest
	// b a run of that length can end at, each pair linked to the top of the pile before it.
	tops := []int{}
	prev := make([]int, len(pairs))
	for k, p := range pairs {
		n := sort.Search(len(tops), func(t int) bool { return pairs[tops[t]][1] > p[1] })
		if n > 0 {
			prev[k] = tops[n-1]
		} else {
			prev[k] = -1
		}
		if n == len(tops) {
			tops = append(tops, k)
		} else {
			tops[n] = k
		}
	}
	out := make([][2]int, len(tops))
	for k, n := tops[len(tops)-1], len(tops)-1; k >= 0; k, n = prev[k], n-1 {
		out[n] = pairs[k]
	}
	return out
}

// myers matches a[alo:ahi] with b[blo:bhi] along a shortest edit script: Myers' O(ND)
// algorithm, dividing at the middle snake so that it needs linear space.
func (d *differ) myers(alo, ahi, blo, bhi int) {
	alo, ahi, blo, bhi, tail := d.trim(alo, ahi, blo, bhi)
	defer d.untrim(tail)
	if alo < ahi && blo < bhi {
		x, y, u, v := d.middleSnake(alo, ahi, blo, bhi)
		if x == u && (x == alo && y == blo || x == ahi && y == bhi) {
			// An empty snake at a corner divides nothing (not expected with both ends
			// trimmed): the lines left are replaced.
			return
		}
		d.myers(alo, x, blo, y)
		for ; x < u; x, y = x+1, y+1 {
			d.matches = append(d.matches, [2]int{x, y})
		}
		d.myers(u, ahi, v, bhi)
	}
}

// middleSnake finds the middle snake of a shortest edit script of a[alo:ahi] and b[blo:bhi]
// (both non-empty): the diagonal run from (x, y) to (u, v), possibly empty, that a shortest
// path crosses half way, searched from both ends at once. The backward search runs on the
// reversed sequences, where diagonal kb is the forward diagonal delta-kb.
// xref: E. Myers, "An O(ND) Difference Algorithm and Its Variations", Algorithmica 1 (1986),
// section 4b (the linear space refinement).
func (d *differ) middleSnake(alo, ahi, blo, bhi int) (x, y, u, v int) {
	n, m := ahi-alo, bhi-blo
	delta := n - m
	odd := delta%2 != 0
	limit := (n + m + 1) / 2
	off := limit + 1
	fwd := make([]int, 2*off+1)
	bwd := make([]int, 2*off+1)
	for D := 0; D <= limit; D++ {
		for k := -D; k <= D; k += 2 {
			var x int
			if k == -D || k != D && fwd[off+k-1] < fwd[off+k+1] {
				x = fwd[off+k+1]
			} else {
				x = fwd[off+k-1] + 1
			}
			y := x - k
			x0, y0 := x, y
			for x < n && y < m && d.a[alo+x] == d.b[blo+y] {
				x, y = x+1, y+1
			}
			fwd[off+k] = x
			if kb := delta - k; odd && kb >= -(D-1) && kb <= D-1 && x+bwd[off+kb] >= n {
				return alo + x0, blo + y0, alo + x, blo + y
			}
		}
		for k := -D; k <= D; k += 2 {
			var x int
			if k == -D || k != D && bwd[off+k-1] < bwd[off+k+1] {
				x = bwd[off+k+1]
			} else {
				x = bwd[off+k-1] + 1
			}
			y := x - k
			x0, y0 := x, y
			for x < n && y < m && d.a[ahi-1-x] == d.b[bhi-1-y] {
				x, y = x+1, y+1
			}
			bwd[off+k] = x
			if kf := delta - k; !odd && kf >= -D && kf <= D && x+fwd[off+kf] >= n {
				return ahi - x, bhi - y, ahi - x0, bhi - y0
			}
		}
	}
	// Not reached: the two searches meet within (n+m+1)/2 steps.
	return alo, blo, alo, blo
}

// ops turns the matched pairs into runs.
func (d *differ) ops() []Op {
	var out []Op
	i, j := 0, 0
	add := func(tag byte, i1, i2, j1, j2 int) {
		if n := len(out); n > 0 && out[n-1].Tag == tag {
			out[n-1].I2, out[n-1].J2 = i2, j2
			return
		}
		out = append(out, Op{tag, i1, i2, j1, j2})
	}
	gap := func(ai, bj int) {
		switch {
		case ai > i && bj > j:
			add(Replace, i, ai, j, bj)
		case ai > i:
			add(Delete, i, ai, j, j)
		case bj > j:
			add(Insert, i, i, j, bj)
		}
	}
	for _, m := range d.matches {
		gap(m[0], m[1])
		add(Equal, m[0], m[0]+1, m[1], m[1]+1)
		i, j = m[0]+1, m[1]+1
	}
	gap(len(d.a), len(d.b))
	return out
}

// Group cuts an edit script into hunks with n lines of context around each change (n < 0: one
// hunk of everything), as diff -u and difflib's GetGroupedOpCodes do: changes closer than 2n
// lines share a hunk. No change, no hunk.
func Group(ops []Op, n int) [][]Op {
	changed := false
	for _, o := range ops {
		changed = changed || o.Tag != Equal
	}
	if !changed {
		return nil
	}
	if n < 0 {
		return [][]Op{ops}
	}
	ops = append([]Op(nil), ops...)
	if first := &ops[0]; first.Tag == Equal {
		first.I1, first.J1 = max(first.I1, first.I2-n), max(first.J1, first.J2-n)
	}
	if last := &ops[len(ops)-1]; last.Tag == Equal {
		last.I2, last.J2 = min(last.I2, last.I1+n), min(last.J2, last.J1+n)
	}
	var groups [][]Op
	var group []Op
	for _, o := range ops {
		if o.Tag == Equal && o.I2-o.I1 > 2*n {
			group = append(group, Op{Equal, o.I1, min(o.I2, o.I1+n), o.J1, min(o.J2, o.J1+n)})
			groups = append(groups, group)
			group = nil
			o.I1, o.J1 = max(o.I1, o.I2-n), max(o.J1, o.J2-n)
		}
		group = append(group, o)
	}
	if len(group) > 0 && !(len(group) == 1 && group[0].Tag == Equal) {
		groups = append(groups, group)
	}
	return groups
}
