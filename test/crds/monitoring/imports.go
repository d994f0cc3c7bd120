// Package monitoring pins the Prometheus Operator API types that test/crds/generate.sh generates
// the PrometheusRule CRD from with controller-gen (its own module: the types need newer
// Kubernetes libraries than test/crds/go.mod's controller-gen builds with). Nothing here runs.
package monitoring

import _ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
