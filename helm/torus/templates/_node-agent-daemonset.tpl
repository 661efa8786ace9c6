{{- /*
The expressions every placement term of the agent carries: no Fargate, hybrid or Auto Mode
node, and, with dra.enabled on part of the cluster, one agent per node: DRA where the node is
labelled for it, else the plugin. Called with (dict "root" $ "dra" true|false).
*/}}
{{- define "torus.nodeAgentExclusions" }}
                  - key: eks.amazonaws.com/compute-type
                    operator: NotIn
                    values: [fargate, hybrid, auto]
                  {{- if and .root.Values.dra.enabled (not .root.Values.dra.allNodes) }}
                  - key: {{ .root.Values.dra.nodeLabel }}
                    operator: {{ if .dra }}In{{ else }}NotIn{{ end }}
                    values: [dra]
                  {{- end }}
{{- end }}

{{- /*
The node agent's DaemonSet, in one of two modes: the device plugin (aws.amazon.com/neuron and
neuroncore through kubelet's device-plugin API) or the DRA driver neuron.aws.com. A node runs
one of them: with dra.enabled, nodes carrying dra.nodeLabel=dra (or every node with
dra.allNodes) get the DRA agent and the others the plugin, so a cluster migrates node by node.
Called with (dict "root" $ "mode" "device-plugin"|"dra").
*/}}
{{- define "torus.nodeAgentDaemonSet" }}
{{- $root := .root }}
{{- $dra := eq .mode "dra" }}
{{- $component := ternary "node-agent-dra" "node-agent" $dra }}
{{- $simulate := $root.Values.nodeAgent.simulate.instanceType }}
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ include "torus.fullname" $root }}-{{ $component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "torus.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ $component }}
spec:
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ $root.Release.Name }}
      app.kubernetes.io/component: {{ $component }}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
  template:
    metadata:
      labels:
        {{- include "torus.labels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ $component }}
    spec:
      serviceAccountName: {{ include "torus.fullname" $root }}-{{ $component }}
      hostPID: {{ $root.Values.nodeAgent.hostPID }}
      {{- include "torus.hostNetwork" $root.Values.nodeAgent | nindent 6 }}
      priorityClassName: {{ $root.Values.nodeAgent.priorityClassName }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            # A Neuron node is one whose instance type is listed or that carries one of
            # neuronNodeLabels. Terms are ORed and a term's expressions ANDed, so each way is a
            # term of its own and every term repeats the exclusions and the mode split.
            nodeSelectorTerms:
              - matchExpressions:
                  - key: node.kubernetes.io/instance-type
                    operator: In
                    values:
                      {{- toYaml $root.Values.neuronInstanceTypes | nindent 22 }}
                  {{- include "torus.nodeAgentExclusions" (dict "root" $root "dra" $dra) }}
              {{- range $root.Values.neuronNodeLabels }}
              - matchExpressions:
                  - key: {{ .key }}
                    operator: In
                    values:
                      {{- toYaml .values | nindent 22 }}
                  {{- include "torus.nodeAgentExclusions" (dict "root" $root "dra" $dra) }}
              {{- end }}
      {{- with $root.Values.nodeAgent.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      tolerations:
        {{- toYaml $root.Values.nodeAgent.tolerations | nindent 8 }}
      containers:
        - name: node-agent
          image: {{ include "torus.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: [/usr/local/bin/neuron-node-agent]
          # /dev is the host's, read-only: kubelet's default /dev/termination-log could not be
          # created there.
          terminationMessagePath: /tmp/termination-log
          args:
            - --metrics-addr=0.0.0.0:{{ $root.Values.nodeAgent.metricsPort }}
            {{- if $dra }}
            - --device-plugin=false
            - --dra
            - --dra-plugins-dir={{ $root.Values.nodeAgent.hostPaths.kubeletPlugins }}
            - --dra-registry-dir={{ $root.Values.nodeAgent.hostPaths.kubeletPluginsRegistry }}
            - --cdi-root={{ $root.Values.nodeAgent.hostPaths.cdi }}
            - --dra-core-devices={{ $root.Values.dra.coreDevices }}
            - --dra-taint-effect={{ $root.Values.dra.taintEffect }}
            - --dra-unmonitored-taint-effect={{ $root.Values.dra.healthTaints.unmonitoredEffect }}
            {{- with $root.Values.dra.healthTaints.keys }}
            - --dra-health-taint-keys={{ range $dimension, $key := . }}{{ $dimension }}={{ $key }},{{ end }}
            {{- end }}
            {{- if $root.Values.dra.healthTaints.legacy }}
            - --dra-legacy-health-taint
            {{- end }}
            {{- if $root.Values.ultraserverOperator.enabled }}
            # Keep this node's devices for the workload its NeuronUltraServer (in this namespace)
            # reserves it for.
            - --ultraserver-reservations={{ $root.Release.Namespace }}
            {{- end }}
            {{- else }}
            - --device-plugin-dir={{ $root.Values.nodeAgent.hostPaths.devicePlugins }}
            - --resources={{ join "," $root.Values.nodeAgent.resources }}
            - --daemonset={{ $root.Release.Namespace }}/{{ include "torus.fullname" $root }}-{{ $component }}
            {{- end }}
            - --pod-resources-socket={{ $root.Values.nodeAgent.hostPaths.podResources }}/kubelet.sock
            {{- with $root.Values.nodeAgent.hostPaths.state }}
            - --state-dir={{ . }}
            {{- end }}
            - --health-interval={{ $root.Values.nodeAgent.healthInterval }}
            - --kernel-error-hold={{ $root.Values.nodeAgent.kernelErrorHold }}
            - --kernel-log-trust-reports={{ $root.Values.nodeAgent.kernelLog.trustReports }}
            - --recover-with-self-test={{ $root.Values.nodeAgent.recovery.enabled }}
            - --recovery-retry={{ $root.Values.nodeAgent.recovery.retryAfter }}
            - --neuron-health-condition={{ $root.Values.nodeAgent.healthConditions.neuronHealth }}
            - --accelerated-hardware-condition={{ $root.Values.nodeAgent.healthConditions.acceleratedHardwareReady }}
            - --health-condition-clear={{ $root.Values.nodeAgent.healthConditions.clearAfter }}
            - --log-level={{ $root.Values.nodeAgent.logLevel }}
            {{- with $root.Values.nodeAgent.deepCheck }}
            {{- if .interval }}
            - --deep-check-interval={{ .interval }}
            {{- end }}
            {{- if eq .command "simulated" }}
            - --deep-check-command={{ $root.Values.nodeAgent.simulate.dir }}/opt/aws/neuron/bin/nccom-test
            {{- else if .command }}
            - {{ printf "--deep-check-command=%s" .command | quote }}
            {{- end }}
            - --deep-check-command-timeout={{ .commandTimeout }}
            {{- end }}
            {{- if $root.Values.nodeAgent.lnc }}
            - --lnc={{ $root.Values.nodeAgent.lnc }}
            {{- end }}
            {{- if $simulate }}
            - --simulate={{ $simulate }}
            - --simulate-dir={{ $root.Values.nodeAgent.simulate.dir }}
            {{- range $root.Values.nodeAgent.simulate.faults }}
            - --simulate-fault={{ . }}
            {{- end }}
            {{- end }}
            {{- with $root.Values.nodeAgent.extraArgs }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          env:
            - name: NODE_NAME
              valueFrom:
                fieldRef:
                  fieldPath: spec.nodeName
            {{- with $root.Values.nodeAgent.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          ports:
            - name: metrics
              containerPort: {{ $root.Values.nodeAgent.metricsPort }}
          # Ready once kubelet can use what the agent serves it (the DRA plugin registered).
          readinessProbe:
            httpGet:
              path: /readyz
              port: metrics
            periodSeconds: 10
          livenessProbe:
            httpGet:
              path: /healthz
              port: metrics
            initialDelaySeconds: 10
            periodSeconds: 20
          {{- $securityContext := deepCopy $root.Values.nodeAgent.securityContext }}
          {{- if $simulate }}
          {{- /* The simulated /dev/neuronN are character devices the agent creates. */}}
          {{- $capabilities := $securityContext.capabilities | default dict }}
          {{- $_ := set $capabilities "add" (append ($capabilities.add | default list) "MKNOD") }}
          {{- $_ := set $securityContext "capabilities" $capabilities }}
          {{- end }}
          {{- with $root.Values.nodeAgent.appArmorProfile }}
          {{- $_ := set $securityContext "appArmorProfile" . }}
          {{- end }}
          {{- with $root.Values.nodeAgent.seLinuxOptions }}
          {{- $_ := set $securityContext "seLinuxOptions" . }}
          {{- end }}
          securityContext:
            {{- toYaml $securityContext | nindent 12 }}
          resources:
            requests:
              {{- toYaml $root.Values.nodeAgent.resourcesRequests | nindent 14 }}
            limits:
              {{- toYaml $root.Values.nodeAgent.resourcesLimits | nindent 14 }}
          volumeMounts:
            {{- if $dra }}
            - name: kubelet-plugins
              mountPath: {{ $root.Values.nodeAgent.hostPaths.kubeletPlugins }}/neuron.aws.com
            - name: kubelet-plugins-registry
              mountPath: {{ $root.Values.nodeAgent.hostPaths.kubeletPluginsRegistry }}
            - name: cdi
              mountPath: {{ $root.Values.nodeAgent.hostPaths.cdi }}
            {{- else }}
            - name: device-plugins
              mountPath: {{ $root.Values.nodeAgent.hostPaths.devicePlugins }}
            {{- end }}
            - name: pod-resources
              mountPath: {{ $root.Values.nodeAgent.hostPaths.podResources }}
            - name: sys
              mountPath: /sys
              readOnly: true
            {{- if not $simulate }}
            - name: neuron-sysfs
              mountPath: /sys/devices/virtual/neuron_device
            {{- end }}
            - name: dev
              mountPath: /dev
              readOnly: true
            - name: opt-aws
              mountPath: /opt/aws
              readOnly: true
            - name: tmp
              mountPath: /tmp
            {{- if $root.Values.nodeAgent.hostPaths.state }}
            - name: state
              mountPath: {{ $root.Values.nodeAgent.hostPaths.state }}
            {{- end }}
            {{- if $simulate }}
            - name: simulated-node
              mountPath: {{ $root.Values.nodeAgent.simulate.dir }}
            {{- end }}
      volumes:
        {{- if $dra }}
        # The driver's own directory under kubelet's plugins (not the other drivers' and CSI's):
        # its socket dra.sock and its checkpoint, at the same path inside and out (kubelet dials
        # the path the driver reports).
        - name: kubelet-plugins
          hostPath:
            path: {{ $root.Values.nodeAgent.hostPaths.kubeletPlugins }}/neuron.aws.com
            type: DirectoryOrCreate
        # kubelet's plugin watcher finds the driver's registration socket here.
        - name: kubelet-plugins-registry
          hostPath:
            path: {{ $root.Values.nodeAgent.hostPaths.kubeletPluginsRegistry }}
            type: DirectoryOrCreate
        # CDI specs the container runtime reads for a claim's devices.
        - name: cdi
          hostPath:
            path: {{ $root.Values.nodeAgent.hostPaths.cdi }}
            type: DirectoryOrCreate
        {{- else }}
        # kubelet's device-plugin directory: our sockets go here and kubelet.sock is watched.
        - name: device-plugins
          hostPath:
            path: {{ $root.Values.nodeAgent.hostPaths.devicePlugins }}
            type: Directory
        {{- end }}
        # kubelet's pod-resources socket: which container holds which device or claim (mount
        # the dir): accounting across resources and the metrics' pod labels.
        - name: pod-resources
          hostPath:
            path: {{ $root.Values.nodeAgent.hostPaths.podResources }}
            type: Directory
        # sysfs, read-only: the driver's devices, PCI and NUMA placement, the EFA devices.
        - name: sys
          hostPath:
            path: /sys
        {{- if not $simulate }}
        # The one writable part: the driver's devices, whose neuronN/reset is written to reset
        # cores between tenants (/sys/class/neuron_device/neuronN links here). It exists once the
        # driver is loaded; without it the pod does not start, and its event says so.
        - name: neuron-sysfs
          hostPath:
            path: /sys/devices/virtual/neuron_device
            type: Directory
        {{- end }}
        # /dev/neuronN: presence is a health signal; reset checks who holds them open.
        - name: dev
          hostPath:
            path: /dev
        # /opt/aws/neuron/logical_nc_config: the node's LNC.
        - name: opt-aws
          hostPath:
            path: /opt/aws
            type: DirectoryOrCreate
        - name: tmp
          emptyDir: {}
        {{- with $root.Values.nodeAgent.hostPaths.state }}
        # The agent's own state across its restarts (the PCI map of this boot): ours alone.
        - name: state
          hostPath:
            path: {{ . }}
            type: DirectoryOrCreate
        {{- end }}
        {{- if $simulate }}
        # The simulated driver tree, at the same path inside and outside: the device paths the
        # plugin hands to kubelet are opened by the container runtime on the host.
        - name: simulated-node
          hostPath:
            path: {{ $root.Values.nodeAgent.simulate.dir }}
            type: DirectoryOrCreate
        {{- end }}
{{- end }}
