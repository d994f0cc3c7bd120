//go:build tools

// Package testhelm pins the Helm module test/helm/build.sh builds helm from (the chart tests:
// `helm template` and `helm lint` over knative/chart/source-watcher-recovery). Nothing here runs.
package testhelm

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
