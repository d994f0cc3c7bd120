// Package testcrds pins the module versions test/crds/generate.sh reads CRDs from. Nothing here
// runs: the blank import keeps the ArtifactGenerator API types in go.mod for controller-gen.
package testcrds

import _ "github.com/fluxcd/source-watcher/api/v2/v1beta1"
