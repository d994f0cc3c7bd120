// Package testcrdsfluxtoolkit pins the Flux kustomize-controller and helm-controller API modules
// that test/crds/flux-toolkit/generate.sh generates the Kustomization and HelmRelease CRDs from.
// Nothing here runs: the blank imports keep the API types in go.mod for controller-gen.
package testcrdsfluxtoolkit

import (
	_ "github.com/fluxcd/helm-controller/api/v2"
	_ "github.com/fluxcd/kustomize-controller/api/v1"
)
