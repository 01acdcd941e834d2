package diff

import (
	"context"
	"sort"

	"github.com/helm-drift/helm-drift/internal/advise"
	"github.com/helm-drift/helm-drift/internal/compare"
)

// suggest asks the advisor for the ignore rules of the measured objects' DIFFERS rows, with the
// HorizontalPodAutoscalers of the namespaces whose workloads' replicas differ.
func suggest(ctx context.Context, cl Cluster, targets []*target, objs []Object) *advise.Advice {
	var in []advise.Object
	scaled := map[string]bool{}
	for i, t := range targets {
		if t.live == nil || objs[i].Error != "" {
			continue
		}
		group, version := splitAPIVersion(t.ob.APIVersion)
		o := advise.Object{Group: group, Version: version, Kind: t.ob.Kind, Namespace: t.id.Namespace, Name: t.ob.Name, Title: objs[i].Object, Live: t.live}
		for _, r := range objs[i].Rows {
			if r.Class == compare.Differs && r.Pointer != "" {
				o.Fields = append(o.Fields, advise.Field{Path: r.Path, Pointer: r.Pointer})
				if r.Pointer == "/spec/replicas" {
					scaled[t.id.Namespace] = true
				}
			}
		}
		if len(o.Fields) > 0 {
			in = append(in, o)
		}
	}
	var scalers []advise.Scaler
	var unread []string
	for ns := range scaled {
		hpas, err := cl.ListObjects(ctx, "autoscaling", "v2", "HorizontalPodAutoscaler", ns)
		if err != nil {
			unread = append(unread, ns+": "+err.Error())
			continue
		}
		for _, h := range hpas {
			md, _ := h["metadata"].(map[string]any)
			spec, _ := h["spec"].(map[string]any)
			ref, _ := spec["scaleTargetRef"].(map[string]any)
			name, _ := md["name"].(string)
			kind, _ := ref["kind"].(string)
			target, _ := ref["name"].(string)
			apiVersion, _ := ref["apiVersion"].(string)
			g, _ := splitAPIVersion(apiVersion)
			scalers = append(scalers, advise.Scaler{Namespace: ns, Name: name, TargetGroup: g, TargetKind: kind, TargetName: target})
		}
	}
	a := advise.Advise(in, scalers)
	sort.Strings(unread)
	for _, u := range unread {
		a.Notes = append(a.Notes, "could not read the HorizontalPodAutoscalers of "+u+": a replicas field an HPA owns is judged by its manager's name only")
	}
	return a
}
