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

{{- define "torus.ultraserverOperator" -}}
{{ include "torus.fullname" . }}-ultraserver-operator
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
{{- with .Values.scheduler.percentageOfNodesToScore }}
percentageOfNodesToScore: {{ . }}
{{- end }}
{{- with .Values.scheduler.clientConnection }}
clientConnection:
  {{- toYaml . | nindent 2 }}
{{- end }}
profiles:
  - schedulerName: {{ $name }}
extenders:
  {{- $tls := .Values.scheduler.extenderTLS.secretName }}
  - urlPrefix: {{ .Values.scheduler.extenderURL | default (printf "%s://%s.%s.svc:%v" (ternary "https" "http" (ne $tls "")) (include "torus.extenderService" .) .Release.Namespace .Values.extender.port) }}
    filterVerb: filter
    prioritizeVerb: prioritize
    bindVerb: bind
    preemptVerb: preempt
    weight: {{ .Values.scheduler.extenderWeight }}
    enableHTTPS: {{ ne $tls "" }}
    {{- if $tls }}
    tlsConfig:
      certFile: /etc/torus/extender-tls/tls.crt
      keyFile: /etc/torus/extender-tls/tls.key
      caFile: /etc/torus/extender-tls/ca.crt
      {{- with .Values.scheduler.extenderTLS.serverName }}
      serverName: {{ . }}
      {{- end }}
    {{- end }}
    httpTimeout: {{ .Values.scheduler.httpTimeout }}
    nodeCacheCapable: {{ .Values.scheduler.nodeCacheCapable }}
    ignorable: false
    managedResources:
      - name: aws.amazon.com/neuroncore
        ignoredByScheduler: false
      - name: aws.amazon.com/neuron
        ignoredByScheduler: false
{{- end -}}

{{- /* The node agent's admission policies (node-agent-policy.yaml): who they apply to, the node
named in its token, and which labels and annotations a request changes. */}}
{{- define "torus.agentPolicyCommon" -}}
matchConditions:
  - name: is-the-node-agent
    expression: request.userInfo.username in {{ .agents | toJson }}
variables:
  # Absent, not empty, on a request for the object itself.
  - name: subresource
    expression: "has(request.subResource) ? request.subResource : ''"
  - name: node
    expression: >-
      'authentication.kubernetes.io/node-name' in request.userInfo.extra
      ? request.userInfo.extra['authentication.kubernetes.io/node-name'][0] : ''
  - name: oldLabels
    expression: "has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}"
  - name: newLabels
    expression: "has(object.metadata.labels) ? object.metadata.labels : {}"
  - name: oldAnnotations
    expression: "has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}"
  - name: newAnnotations
    expression: "has(object.metadata.annotations) ? object.metadata.annotations : {}"
  - name: changedLabels
    expression: >-
      variables.newLabels.filter(k, !(k in variables.oldLabels) ||
      variables.oldLabels[k] != variables.newLabels[k]) +
      variables.oldLabels.filter(k, !(k in variables.newLabels))
  - name: changedAnnotations
    expression: >-
      variables.newAnnotations.filter(k, !(k in variables.oldAnnotations) ||
      variables.oldAnnotations[k] != variables.newAnnotations[k]) +
      variables.oldAnnotations.filter(k, !(k in variables.newAnnotations))
{{- end -}}

{{- define "torus.agentPolicyTokenCheck" -}}
- expression: variables.node != ''
  message: >-
    the node agent's token names no node: only the token of an agent pod, bound to that pod,
    may write
  reason: Forbidden
{{- end -}}

{{- define "torus.agentPolicyMetadataChecks" -}}
- expression: >-
    variables.subresource != '' || (variables.specUnchanged &&
    (has(object.metadata.finalizers) ? object.metadata.finalizers : []) ==
    (has(oldObject.metadata.finalizers) ? oldObject.metadata.finalizers : []) &&
    (has(object.metadata.ownerReferences) ? object.metadata.ownerReferences : []) ==
    (has(oldObject.metadata.ownerReferences) ? oldObject.metadata.ownerReferences : []))
  message: the node agent may not change a spec (but its own taint on its Node), finalizers or owners
  reason: Forbidden
- expression: variables.subresource != '' || size(variables.foreignLabels) == 0
  messageExpression: "'the node agent may not change the labels ' + variables.foreignLabels.join(', ')"
  reason: Forbidden
- expression: variables.subresource != '' || size(variables.foreignAnnotations) == 0
  messageExpression: >-
    'the node agent may not change the annotations ' + variables.foreignAnnotations.join(', ')
  reason: Forbidden
{{- end -}}

{{- /* The status.conditions schema of the UltraServer CRDs: upstream metav1.Condition. */ -}}
{{- define "torus.conditionsSchema" -}}
type: array
description: The latest observations of the object's state, one per condition type.
items:
  type: object
  description: One aspect of the object's state at one time.
  required: [lastTransitionTime, message, reason, status, type]
  properties:
    lastTransitionTime:
      type: string
      format: date-time
      description: When the status last changed.
    message:
      type: string
      maxLength: 32768
      description: Details of the transition, for people.
    observedGeneration:
      type: integer
      format: int64
      minimum: 0
      description: The object's metadata.generation the condition was set from.
    reason:
      type: string
      minLength: 1
      maxLength: 1024
      pattern: ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$
      description: Why the status last changed, as a CamelCase word for programs.
    status:
      type: string
      enum: ["True", "False", Unknown]
      description: Whether the condition holds.
    type:
      type: string
      maxLength: 316
      pattern: ^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$
      description: The condition's name, in CamelCase.
{{- end -}}

{{- /* The node agents' rules for their own Node (both modes). */}}
{{- define "torus.nodeAgentNodeRules" }}
  - apiGroups: [""]
    resources: [nodes]
    verbs: [get, patch]
  - apiGroups: [""]
    resources: [nodes/status]
    verbs: [patch]
  - apiGroups: [""]
    resources: [events]
    verbs: [create]
{{- end }}
