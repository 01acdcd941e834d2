package compare

import "fmt"

// Shadows is the fourth class: an inline env entry whose name a container also receives from
// an envFrom source (a ConfigMap's or Secret's keys, prefix applied). The inline entry wins in
// the pod, which hides the source's value.
const Shadows Class = "SHADOWS"

// Source gives the data of a ConfigMap or Secret an envFrom names. ok is false when it
// cannot be read (absent or forbidden): no shadow can be judged then.
type Source func(kind, name string) (data map[string]string, ok bool)

// Shadow is one inline env entry that hides a key of an envFrom source.
type Shadow struct {
	// Container and Env name the entry; Path names it as Compare does.
	Container, Env, Path string
	// From names the source: "ConfigMap settings" or "Secret creds", with its prefix.
	From string
	// Agree says whether the inline value equals the source's; Known is false when the inline
	// entry takes its value from elsewhere (valueFrom), so the two cannot be compared.
	Agree, Known bool
	// Secret is set when the source is a Secret: no value is ever carried.
	Secret bool
}

// FindShadows looks at every container of a pod spec (decoded JSON) at podSpecPath.
func FindShadows(podSpec map[string]any, podSpecPath string, source Source) []Shadow {
	var out []Shadow
	for _, list := range []string{"initContainers", "containers"} {
		containers, _ := podSpec[list].([]any)
		for _, c := range containers {
			cm, _ := c.(map[string]any)
			name, _ := cm["name"].(string)
			out = append(out, containerShadows(cm, fmt.Sprintf("%s.%s[name=%s]", podSpecPath, list, name), name, source)...)
		}
	}
	return out
}

func containerShadows(c map[string]any, path, container string, source Source) []Shadow {
	type provided struct {
		from   string
		value  string
		secret bool
	}
	keys := map[string]provided{}
	envFrom, _ := c["envFrom"].([]any)
	for _, ef := range envFrom {
		m, _ := ef.(map[string]any)
		prefix, _ := m["prefix"].(string)
		for _, kind := range []string{"configMapRef", "secretRef"} {
			ref, ok := m[kind].(map[string]any)
			if !ok {
				continue
			}
			name, _ := ref["name"].(string)
			k := map[string]string{"configMapRef": "ConfigMap", "secretRef": "Secret"}[kind]
			data, ok := source(k, name)
			if !ok {
				continue
			}
			from := k + " " + name
			if prefix != "" {
				from += fmt.Sprintf(" (prefix %q)", prefix)
			}
			for key, v := range data {
				// A later envFrom source wins over an earlier one for the same key.
				keys[prefix+key] = provided{from: from, value: v, secret: k == "Secret"}
			}
		}
	}
	var out []Shadow
	env, _ := c["env"].([]any)
	for _, e := range env {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		p, ok := keys[name]
		if !ok {
			continue
		}
		value, hasValue := m["value"].(string)
		_, hasValueFrom := m["valueFrom"]
		s := Shadow{Container: container, Env: name, Path: path + ".env[name=" + name + "]", From: p.from, Secret: p.secret, Known: hasValue || !hasValueFrom}
		if s.Known {
			s.Agree = value == p.value
		}
		out = append(out, s)
	}
	return out
}
