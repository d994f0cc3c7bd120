// Package testcrdsv23 pins the source-watcher API module v2.3.1 that test/crds/ag-v2.3/generate.sh
// generates the ArtifactGenerator CRD from. Nothing here runs: the blank import keeps the API types
// in go.mod for controller-gen (a module can require one version only, so v2.1 is test/crds/).
package testcrdsv23

import _ "github.com/fluxcd/source-watcher/api/v2/v1beta1"
