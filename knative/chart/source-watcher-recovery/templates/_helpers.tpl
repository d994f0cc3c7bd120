{{- /*
Hand-written helpers of the generated chart (docs/adr/0065). The other templates come from
`npm run chart` (test/chart/generate.ts) and call these.
*/}}

{{- /* The flags the generated templates branch on, as JSON: {"observe": bool, ...}. */}}
{{- define "swr.flags" -}}
{{- $mode := .Values.mode | toString | lower }}
{{- if not (has $mode (list "enforce" "observe" "off")) }}
{{- fail (printf "mode: %q is not one of enforce, observe, off (quote off in YAML: 'off')" .Values.mode) }}
{{- end }}
{{- $functions := .Values.functions | default dict }}
{{- $senderAuth := .Values.senderAuth | default dict }}
{{- $scoped := gt (len (include "swr.scope" . | fromJsonArray)) 0 }}
{{- toJson (dict
  "observe" (eq $mode "observe")
  "off" (eq $mode "off")
  "surfaceStalled" (and (not $scoped) (ne (toString $functions.surfaceStalled) "false"))
  "healExternalArtifacts" (and (not $scoped) (ne (toString $functions.healExternalArtifacts) "false"))
  "senderAuth" (eq (toString $senderAuth.enabled) "true")
  "scoped" $scoped) }}
{{- end }}

{{- /*
The scoped install's namespaces (knative/overlays/scoped, docs/adr/0055), as a JSON list: empty
for a cluster-wide install. Each a DNS label, at most 64, none twice. A scoped install has neither
surface-stalled nor heal-external-artifacts, whatever `functions` says.
*/}}
{{- define "swr.scope" -}}
{{- $list := (.Values.scope | default dict).namespaces | default list }}
{{- if gt (len $list) 64 }}
{{- fail (printf "scope.namespaces: %d namespaces, at most 64" (len $list)) }}
{{- end }}
{{- range $list }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" (toString .)) }}
{{- fail (printf "scope.namespaces: %q is not a namespace name (a DNS label)" .) }}
{{- end }}
{{- end }}
{{- if ne (len $list) (len (uniq $list)) }}
{{- fail "scope.namespaces: a namespace is listed twice" }}
{{- end }}
{{- toJson $list }}
{{- end }}

{{- /* The install namespace: a DNS label (RFC 1123), not all digits. */}}
{{- define "swr.namespace" -}}
{{- $ns := .Values.namespace.name | default .Release.Namespace | toString }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" $ns) }}
{{- fail (printf "namespace.name: %q is not a namespace name (a DNS label: lower case letters, digits and '-', at most 63)" $ns) }}
{{- end }}
{{- if regexMatch "^[0-9]+$" $ns }}
{{- fail (printf "namespace.name: %q: all digits would read as a number" $ns) }}
{{- end }}
{{- $ns }}
{{- end }}

{{- /* repository@digest, else repository:tag. */}}
{{- define "swr.image" -}}
{{- $repository := .Values.image.repository | toString }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9._/:]*[a-z0-9])?$" $repository) }}
{{- fail (printf "image.repository: %q is not an image repository" $repository) }}
{{- end }}
{{- with .Values.image.digest }}
{{- if not (regexMatch "^sha256:[a-f0-9]{64}$" (toString .)) }}
{{- fail (printf "image.digest: %q is not sha256:<64 hex digits>" .) }}
{{- end }}
{{- printf "%s@%s" $repository . }}
{{- else }}
{{- $tag := .Values.image.tag | toString }}
{{- if not (regexMatch "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$" $tag) }}
{{- fail (printf "image.tag: %q is not an image tag" $tag) }}
{{- end }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}
{{- end }}

{{- /*
The name kustomize's configMapGenerator gives a ConfigMap of this name and data: name-<hash>,
the hash being the first 10 hex digits of sha256 over {"data":…,"kind":"ConfigMap","name":""}
(Go's JSON, keys sorted; kustomize hashes before it sets the name) with 0,1,3,a,e spelled
g,h,k,m,t. Used when the renders hash
recovery-config; test/unit/manifests/chart-hash.test.ts checks it against kustomize.
*/}}
{{- define "swr.kustomizeConfigMapName" -}}
{{- $hash := toJson (dict "kind" "ConfigMap" "name" "" "data" .data) | sha256sum | trunc 10 }}
{{- $hash = $hash | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t" }}
{{- printf "%s-%s" .name $hash }}
{{- end }}
