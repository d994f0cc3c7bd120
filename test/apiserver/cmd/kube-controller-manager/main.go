// Command kube-controller-manager is the upstream Kubernetes controller manager
// (k8s.io/kubernetes v1.37.2), unmodified, for tests. The test server (../..) runs it with only
// the namespace, serviceaccount and garbage-collector controllers; see docs/adr/0030.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"

	"swr/testapiserver/internal/parentwatch"
)

func main() {
	parentwatch.TerminateOnStdinEOF()
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
