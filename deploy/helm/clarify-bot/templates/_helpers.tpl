{{/* The release's name for every object: <release>-clarify-bot unless the release has it. */}}
{{- define "clarify-bot.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "clarify-bot.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "clarify-bot.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "clarify-bot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The pods of one role ("web" or "worker"): call with (dict "root" $ "role" "web"). */}}
{{- define "clarify-bot.selector" -}}
app.kubernetes.io/name: {{ include "clarify-bot.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .role }}
{{- end -}}

{{- define "clarify-bot.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "clarify-bot.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "clarify-bot.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
One role's Deployment: call with (dict "root" $ "role" "web" "values" .Values.web
"args" (list ...) "port" 3978 "env" (list ...)).
*/}}
{{- define "clarify-bot.deployment" -}}
{{- $root := .root -}}
{{- $v := .values -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "clarify-bot.fullname" $root }}-{{ .role }}
  labels:
    {{- include "clarify-bot.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .role }}
spec:
  {{- if not $v.autoscaling.enabled }}
  replicas: {{ $v.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    {{- toYaml $v.strategy | nindent 4 }}
  selector:
    matchLabels:
      {{- include "clarify-bot.selector" (dict "root" $root "role" .role) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "clarify-bot.labels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ .role }}
      annotations:
        # a changed settings file rolls the pods
        checksum/settings: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "clarify-bot.serviceAccountName" $root }}
      automountServiceAccountToken: false
      enableServiceLinks: false
      terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      containers:
        - name: {{ .role }}
          image: {{ include "clarify-bot.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
            {{- toYaml .args | nindent 12 }}
          env:
            - name: CLARIFY_BOT_CONFIG
              value: /etc/clarify-bot/clarify-bot.toml
            - name: CLARIFY_BOT_SECRETS_DIR
              value: {{ $root.Values.secrets.mountPath | quote }}
            - name: CLARIFY_BOT_SERVER__HOST
              value: "0.0.0.0"
            {{- toYaml .env | nindent 12 }}
          ports:
            - name: {{ .portName }}
              containerPort: {{ .port }}
              protocol: TCP
          startupProbe:
            httpGet: {path: /healthz, port: {{ .portName }}}
            {{- toYaml $root.Values.probes.startup | nindent 12 }}
          livenessProbe:
            httpGet: {path: /healthz, port: {{ .portName }}}
            {{- toYaml $root.Values.probes.liveness | nindent 12 }}
          readinessProbe:
            httpGet: {path: /readyz, port: {{ .portName }}}
            {{- toYaml $root.Values.probes.readiness | nindent 12 }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            - name: settings
              mountPath: /etc/clarify-bot
              readOnly: true
            - name: secrets
              mountPath: {{ $root.Values.secrets.mountPath | quote }}
              readOnly: true
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: settings
          configMap:
            name: {{ include "clarify-bot.fullname" $root }}-settings
        - name: secrets
          secret:
            secretName: {{ required "secrets.existingSecret: the name of the Secret with the bot's secrets" $root.Values.secrets.existingSecret }}
            defaultMode: 0440
        - name: tmp
          emptyDir: {sizeLimit: 16Mi}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}
