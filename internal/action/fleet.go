package action

import (
	"context"
	"sync"
	"time"

	"github.com/helm-drift/helm-drift/internal/diff"
)

// Fleet measures several clusters in one run: the cluster of each kubeconfig context, all at
// once, with the same verb, into one summary. A cluster that cannot be measured is one
// ClusterRun with its error; the others are reported all the same.
type Fleet struct {
	// Options choose the kubeconfig and the request timeout; each context replaces Context.
	Options KubeOptions
	// Contexts are the kubeconfig contexts to measure, in the order the summary lists them.
	Contexts []string
	// Now is the clock of the stamps (nil: time.Now).
	Now func() time.Time
}

// FleetRun is what a verb does with one cluster: measure it into a summary, telling progress
// after each release.
type FleetRun func(ctx context.Context, cfg *Configuration, progress func(done, total int)) (*Summary, error)

// Run measures every context concurrently with run. progress (may be nil) is told, per
// context, how many of its releases are measured. The summary's rows carry their context and
// are in the order of Contexts, then namespace and name; its Clusters say when and against
// which server each was measured, or why it could not be; configs are the contexts'
// configurations (nil where the kubeconfig could not be loaded), for their request counts.
func (f *Fleet) Run(ctx context.Context, run FleetRun, progress func(kubeContext string, done, total int)) (s *Summary, configs []*Configuration) {
	now := f.Now
	if now == nil {
		now = time.Now
	}
	parts := make([]*Summary, len(f.Contexts))
	clusters := make([]diff.ClusterRun, len(f.Contexts))
	configs = make([]*Configuration, len(f.Contexts))
	var wg sync.WaitGroup
	for i, name := range f.Contexts {
		wg.Go(func() {
			opts := f.Options
			opts.Context = name
			clusters[i].Stamp = diff.NewStamp(now(), name, "")
			cfg, err := NewConfiguration(opts, nil)
			if err == nil {
				configs[i] = cfg
				clusters[i].Server = cfg.Server()
				err = cfg.Connect(ctx)
			}
			var tell func(done, total int)
			if progress != nil {
				tell = func(done, total int) { progress(name, done, total) }
			}
			if err == nil {
				parts[i], err = run(ctx, cfg, tell)
			}
			if err != nil {
				clusters[i].Error = err.Error()
			}
		})
	}
	wg.Wait()
	s = &Summary{Clusters: clusters}
	for i, p := range parts {
		if p == nil {
			continue
		}
		for _, r := range p.Rows {
			r.Context = f.Contexts[i]
			s.Rows = append(s.Rows, r)
		}
		for _, u := range p.Unmeasured {
			s.Unmeasured = append(s.Unmeasured, "context "+f.Contexts[i]+": "+u)
		}
	}
	return s, configs
}
