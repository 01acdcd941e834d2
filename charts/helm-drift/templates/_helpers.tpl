{{- define "helm-drift.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "helm-drift.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "helm-drift.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "helm-drift.serviceAccount" -}}
{{- default (include "helm-drift.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The interval in seconds, for the staleness alert (10m, 1h30m, 45s). */}}
{{- define "helm-drift.intervalSeconds" -}}
{{- $s := 0 -}}
{{- range $part := regexFindAll "[0-9]+[hms]" .Values.serve.interval -1 -}}
{{- $n := int (trimSuffix "h" (trimSuffix "m" (trimSuffix "s" $part))) -}}
{{- if hasSuffix "h" $part }}{{ $s = add $s (mul $n 3600) }}{{ else if hasSuffix "m" $part }}{{ $s = add $s (mul $n 60) }}{{ else }}{{ $s = add $s $n }}{{ end -}}
{{- end -}}
{{- if eq $s 0 }}{{ fail (printf "serve.interval %q: want a duration such as 10m or 1h30m" .Values.serve.interval) }}{{ end -}}
{{- $s -}}
{{- end -}}
