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

{{/* Secret holding the database owner's URL when it is the user's own (database.secretName, default
<release>-database); the migrate Job reads it. */}}
{{- define "gatehouse.databaseSecretName" -}}
{{- default (printf "%s-database" (include "gatehouse.prefix" .)) .Values.database.secretName -}}
{{- end }}

{{/* The hook Secret holding the URLs given as values (database.url, database.runtime.*.url) for the
migrate Job: <release>-migrate. */}}
{{- define "gatehouse.migrateName" -}}
{{- printf "%s-migrate" (include "gatehouse.prefix" .) -}}
{{- end }}

{{/* Refuses values from before the runtime logins (database.operatorUrl / operatorSecretName). */}}
{{- define "gatehouse.refuseOldDatabaseValues" -}}
{{- if or .Values.database.operatorUrl .Values.database.operatorSecretName -}}
{{- fail "database.operatorUrl and database.operatorSecretName are gone: the operator role's URL is now database.runtime.controller.url (or .secretName), a login that is a member of gatehouse_controller; see docs/upgrading.md" -}}
{{- end -}}
{{- end }}

{{/* The Secret holding component .component's runtime URL (dict "root" $ "component" "controller"):
runtime.<component>.secretName, else <release>-database-<component> when runtime.<component>.url is
set, else empty. */}}
{{- define "gatehouse.runtimeSecretName" -}}
{{- $runtime := index .root.Values.database.runtime .component -}}
{{- if $runtime.secretName -}}
{{- $runtime.secretName -}}
{{- else if $runtime.url -}}
{{- printf "%s-database-%s" (include "gatehouse.prefix" .root) .component -}}
{{- end -}}
{{- end }}

{{/* Like gatehouse.runtimeSecretName, but fails the render when the component's runtime login is not given. */}}
{{- define "gatehouse.requiredRuntimeSecretName" -}}
{{- $name := include "gatehouse.runtimeSecretName" . -}}
{{- if not $name -}}
{{- fail (printf "database.runtime.%s.secretName (or database.runtime.%s.url) is required: the Postgres URL of the %s's runtime login, a member of gatehouse_%s, never the owner's; see docs/upgrading.md" .component .component .component .component) -}}
{{- end -}}
{{- $name -}}
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

{{/* Labels of the migrate Job, its pod and its hook Secret: not the operator's selector labels, so no
Service, PodDisruptionBudget or NetworkPolicy of the operator selects them. */}}
{{- define "gatehouse.migrateLabels" -}}
app.kubernetes.io/name: gatehouse-migrate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: gatehouse
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}
