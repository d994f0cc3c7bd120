// Command kube-apiserver is the upstream Kubernetes API server (k8s.io/kubernetes v1.37.2),
// unmodified, for tests. The test server (../..) starts it with its flags; see docs/adr/0030.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	"swr/testapiserver/internal/parentwatch"
)

func main() {
	parentwatch.TerminateOnStdinEOF()
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
