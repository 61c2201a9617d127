{{/*
Names and labels shared by the templates. templates/generated/ (written by `make crds`) uses
gatehouse.prefix, gatehouse.componentName, gatehouse.componentServiceAccount,
gatehouse.leaderElectionNamespace, gatehouse.identityBindingNamespaces and gatehouse.modelKeySecrets.
*/}}

{{/* The release's prefix: the release name, at most 40 characters so every suffix fits a DNS label. */}}
{{- define "gatehouse.prefix" -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end }}

{{/* Name of component .component's Deployment, ClusterRole, Role and bindings (dict "root" $
"component" "gateway"): <release>-gateway, <release>-controller. */}}
{{- define "gatehouse.componentName" -}}
{{- printf "%s-%s" (include "gatehouse.prefix" .root) .component -}}
{{- end }}

{{/* Component .component's ServiceAccount (dict "root" $ "component" "controller"): the admission
policies name the controller's as the only writer of status and finalizers, and the gateway's beside it
as a creator of Approvals. */}}
{{- define "gatehouse.componentServiceAccount" -}}
{{- $values := index .root.Values .component -}}
{{- default (include "gatehouse.componentName" .) (($values.serviceAccount | default dict).name) -}}
{{- end }}

{{/* Refuses the values of the one-Deployment chart that moved under gateway.* and controller.*. */}}
{{- define "gatehouse.refuseMovedValues" -}}
{{- range $old := list "replicaCount" "serviceAccount" "resources" "podDisruptionBudget" "topologySpreadConstraints" -}}
{{- if hasKey $.Values $old -}}
{{- $new := $old -}}
{{- if eq $old "replicaCount" }}{{ $new = "replicas" }}{{ end -}}
{{- fail (printf "%s moved: the gateway and the controller are two Deployments now; set gateway.%s and controller.%s instead (see docs/upgrading.md, \"What moved\")" $old $new $new) -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/* JSON list of the provider namespaces where the controller may list identity-binding Secrets:
rbac.identityBindingNamespaces, else watchNamespaces; the render fails when both are empty, since
RBAC cannot narrow `list secrets` by label and no component holds it cluster-wide. */}}
{{- define "gatehouse.identityBindingNamespaces" -}}
{{- $names := .Values.rbac.identityBindingNamespaces | default .Values.watchNamespaces -}}
{{- if not $names -}}
{{- fail "rbac.identityBindingNamespaces is required: the provider namespaces whose identity-binding Secrets (label gatehouse.dev/identity-binding) the controller may list and publishes for the gateway; no component may list Secrets cluster-wide (see docs/upgrading.md)" -}}
{{- end -}}
{{- $names | toJson -}}
{{- end }}

{{/* Namespace of the Lease, the audit checkpoints ConfigMap, the grant keys Secrets and the grant
public keys ConfigMap. */}}
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

{{/* Refuses values from before the runtime logins (database.operatorUrl / operatorSecretName / operatorSecretKey). */}}
{{- define "gatehouse.refuseOldDatabaseValues" -}}
{{- if or .Values.database.operatorUrl .Values.database.operatorSecretName .Values.database.operatorSecretKey -}}
{{- fail "database.operatorUrl, database.operatorSecretName and database.operatorSecretKey are gone: the operator role's URL is now database.runtime.controller.url (or .secretName), a login that is a member of gatehouse_controller; see docs/upgrading.md" -}}
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
Labels that select component .component's pods (dict "root" $ "component" "gateway").
app.kubernetes.io/name=gatehouse-gateway and gatehouse-controller are part of the API
(COMPONENT_POD_LABELS): the NetworkPolicies the controller applies for agent and provider pods select
the components by them.
*/}}
{{- define "gatehouse.componentSelectorLabels" -}}
app.kubernetes.io/name: gatehouse-{{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}

{{/* Labels of component .component's objects (dict "root" $ "component" "gateway"). */}}
{{- define "gatehouse.componentLabels" -}}
{{ include "gatehouse.componentSelectorLabels" . }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: gatehouse
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end }}

{{/* Labels of the release's objects that belong to neither component alone. */}}
{{- define "gatehouse.labels" -}}
app.kubernetes.io/name: gatehouse
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: gatehouse
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* Labels of the migrate Job, its pod and its hook Secret: neither component's selector labels, so no
Service, PodDisruptionBudget or NetworkPolicy of the components selects them. */}}
{{- define "gatehouse.migrateLabels" -}}
app.kubernetes.io/name: gatehouse-migrate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: gatehouse
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The transcripts API's Service (the APIService names it) and its serving certificate's Secret. */}}
{{- define "gatehouse.transcriptsApiName" -}}
{{- printf "%s-transcripts-api" (include "gatehouse.prefix" .) -}}
{{- end }}

{{- define "gatehouse.transcriptsApiSecretName" -}}
{{- .Values.gateway.transcriptsApi.tls.secretName | default (printf "%s-tls" (include "gatehouse.transcriptsApiName" .)) -}}
{{- end }}
