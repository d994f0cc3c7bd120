package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// Admission plugins that need a core API (namespaces, webhooks, policies) this server lacks.
var disabledAdmissionPlugins = []string{
	"NamespaceLifecycle",
	"MutatingAdmissionWebhook",
	"ValidatingAdmissionWebhook",
	"ValidatingAdmissionPolicy",
	"MutatingAdmissionPolicy",
}

type apiServerConfig struct {
	etcdURL               string
	listener              net.Listener
	tls                   pkiFiles
	unreachableKubeconfig string
	stdout, stderr        io.Writer
}

// runAPIServer serves CustomResourceDefinitions and their custom resources until ctx ends.
func runAPIServer(ctx context.Context, c apiServerConfig) error {
	port := c.listener.Addr().(*net.TCPAddr).Port
	o := options.NewCustomResourceDefinitionsServerOptions(c.stdout, c.stderr)
	fs := pflag.NewFlagSet("apiextensions-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + c.tls.serverCert,
		"--tls-private-key-file=" + c.tls.serverKey,
		"--client-ca-file=" + c.tls.caCert,
		"--authentication-skip-lookup",
		"--authentication-kubeconfig=" + c.unreachableKubeconfig,
		"--authorization-kubeconfig=" + c.unreachableKubeconfig,
		"--kubeconfig=" + c.unreachableKubeconfig,
		"--enable-priority-and-fairness=false",
		"--disable-admission-plugins=" + strings.Join(disabledAdmissionPlugins, ","),
		"--profiling=false",
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parse server flags: %w", err)
	}
	o.RecommendedOptions.SecureServing.Listener = c.listener
	if err := o.ServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("set component globals: %w", err)
	}
	if err := o.Complete(); err != nil {
		return fmt.Errorf("complete options: %w", err)
	}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("validate options: %w", err)
	}
	config, err := o.Config()
	if err != nil {
		return fmt.Errorf("build config: %w", err)
	}
	server, err := config.Complete().New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return fmt.Errorf("create server: %w", err)
	}
	return server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}
