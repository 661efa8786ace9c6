{{- define "torus.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "torus.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "torus.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "torus.extenderService" -}}
{{ include "torus.fullname" . }}-extender
{{- end -}}

{{- /* hostNetwork for a component's pod spec; its DNS still resolves cluster names. */ -}}
{{- define "torus.hostNetwork" -}}
{{- if .hostNetwork }}
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
{{- end }}
{{- end -}}

{{- /* The second scheduler's KubeSchedulerConfiguration (its ConfigMap, and a checksum on its pods). */ -}}
{{- define "torus.schedulerConfig" -}}
{{- $name := .Values.scheduler.name -}}
apiVersion: {{ .Values.scheduler.configApiVersion }}
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: {{ .Values.scheduler.leaderElect }}
  resourceNamespace: {{ .Release.Namespace }}
  resourceName: {{ $name }}
profiles:
  - schedulerName: {{ $name }}
extenders:
  - urlPrefix: {{ .Values.scheduler.extenderURL | default (printf "http://%s.%s.svc:%v" (include "torus.extenderService" .) .Release.Namespace .Values.extender.port) }}
    filterVerb: filter
    prioritizeVerb: prioritize
    bindVerb: bind
    preemptVerb: preempt
    weight: {{ .Values.scheduler.extenderWeight }}
    enableHTTPS: false
    httpTimeout: {{ .Values.scheduler.httpTimeout }}
    nodeCacheCapable: {{ .Values.scheduler.nodeCacheCapable }}
    ignorable: false
    managedResources:
      - name: aws.amazon.com/neuroncore
        ignoredByScheduler: false
      - name: aws.amazon.com/neuron
        ignoredByScheduler: false
{{- end -}}
