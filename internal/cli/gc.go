package cli

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// shortRunGC is the garbage collector's target for a run over one release or one stream: such a
// run allocates far more than it keeps (decoded documents, live objects, the Helm SDKs'
// renders), so its heap may grow to three times what is live before a collection, not Go's
// default of twice. On a diff upgrade of kube-prometheus-stack that cut 2.21 s of CPU to 1.97 s
// (median of 7), for a peak RSS of 250-275 MB against 220; what a run holds live is the same.
const shortRunGC = 200

// collectFor sets the garbage collector's target for a run, unless GOGC sets it: shortRunGC
// for a run over one release or one stream; Go's default for one over many (--all, -A,
// several clusters), whose live heap grows with the fleet and would grow three times over
// (diff helmrelease -A of 1,000 HelmReleases: 414 MB of peak RSS against 304).
func collectFor(many bool) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	if many {
		debug.SetGCPercent(100)
		return
	}
	debug.SetGCPercent(shortRunGC)
}

// renderManyGC is the target for diff tree, which renders many charts in one process and keeps
// little of each (a tree's objects and each HelmRelease's rows): on diff tree --all of make
// bench's 200-HelmRelease repository, runs alternated with GOGC=100 took 23-30 s of wall time
// and 42-55 s of CPU against 31-34 s and 56-62 s, for a peak RSS of 0.73-0.81 GB against
// 0.36 GB.
const renderManyGC = 400

// collectForRenders sets the garbage collector for diff tree, unless GOGC or GOMEMLIMIT set
// it: renderManyGC, under a soft memory limit of 1 GiB, or half the cgroup's memory limit
// (cgroup v2) when that is lower, past which the collector runs as often as it must.
func collectForRenders() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(renderManyGC)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		limit := int64(1 << 30)
		if c := cgroupMemoryMax(); c > 0 && c/2 < limit {
			limit = c / 2
		}
		debug.SetMemoryLimit(limit)
	}
}

// cgroupMemoryMax is the memory limit of this process's cgroup (v2) in bytes; 0 when there
// is none ("max") or it cannot be read.
func cgroupMemoryMax() int64 {
	data, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
