{{/*
Names and labels shared by the templates. templates/generated/ (written by `make crds`) uses
gatehouse.operatorName, gatehouse.serviceAccountName, gatehouse.leaderElectionNamespace and
gatehouse.modelKeySecrets.
*/}}

{{/* The release's prefix: the release name, at most 40 characters so every suffix fits a DNS label. */}}
{{- define "gatehouse.prefix" -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end }}

{{/* Name of the operator's Deployment, ClusterRole, Role and bindings: <release>-operator. */}}
{{- define "gatehouse.operatorName" -}}
{{- printf "%s-operator" (include "gatehouse.prefix" .) -}}
{{- end }}

{{/* The operator's ServiceAccount (the admission policies' operator identity). */}}
{{- define "gatehouse.serviceAccountName" -}}
{{- default (include "gatehouse.operatorName" .) .Values.serviceAccount.name -}}
{{- end }}

{{/* Namespace of the Lease, the audit checkpoints ConfigMap and the grant keys Secret. */}}
{{- define "gatehouse.leaderElectionNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace -}}
{{- end }}

{{/* JSON list of the distinct key Secrets of modelEndpoints (sorted). */}}
{{- define "gatehouse.modelKeySecrets" -}}
{{- $names := list -}}
{{- range .Values.modelEndpoints -}}
{{- if .keySecretRef -}}
{{- $names = append $names .keySecretRef.name -}}
{{- end -}}
{{- end -}}
{{- $names | uniq | sortAlpha | toJson -}}
{{- end }}

{{/* The gateway Service: <release>-gateway. */}}
{{- define "gatehouse.gatewayName" -}}
{{- printf "%s-gateway" (include "gatehouse.prefix" .) -}}
{{- end }}

{{/* The URL agent pods reach the gateway at. */}}
{{- define "gatehouse.gatewayUrl" -}}
{{- default (printf "http://%s.%s.svc:%d" (include "gatehouse.gatewayName" .) .Release.Namespace (int .Values.gateway.port)) .Values.gateway.url -}}
{{- end }}

{{/* Secret holding DATABASE_URL (the database owner's URL). */}}
{{- define "gatehouse.databaseSecretName" -}}
{{- default (printf "%s-database" (include "gatehouse.prefix" .)) .Values.database.secretName -}}
{{- end }}

{{/* Secret holding GATEHOUSE_OPERATOR_DATABASE_URL (the operator role's URL); empty when neither
operatorSecretName nor operatorUrl is set. */}}
{{- define "gatehouse.operatorDatabaseSecretName" -}}
{{- if .Values.database.operatorSecretName -}}
{{- .Values.database.operatorSecretName -}}
{{- else if .Values.database.operatorUrl -}}
{{- printf "%s-database-operator" (include "gatehouse.prefix" .) -}}
{{- end -}}
{{- end }}

{{/* The operator image. */}}
{{- define "gatehouse.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end }}

{{/* The agent image. */}}
{{- define "gatehouse.agentImage" -}}
{{- default (printf "gatehouse/agent:%s" .Chart.AppVersion) .Values.agent.image -}}
{{- end }}

{{/*
Labels that select the operator's pods. app.kubernetes.io/name=gatehouse-operator is part of the API:
the NetworkPolicies the operator creates for agent and provider pods select the gateway by it.
*/}}
{{- define "gatehouse.selectorLabels" -}}
app.kubernetes.io/name: gatehouse-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object of the release. */}}
{{- define "gatehouse.labels" -}}
{{ include "gatehouse.selectorLabels" . }}
app.kubernetes.io/part-of: gatehouse
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}
