//go:build tools

// Package testprometheus pins the Prometheus module test/prometheus/build.sh builds prometheus
// and promtool from (the test world's Prometheus room and the rule tests). Nothing here runs.
package testprometheus

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
