// Command testapiserver runs a throw-away Kubernetes control plane for tests: embedded etcd, the
// real kube-apiserver (RBAC enforced, ServiceAccount tokens) and kube-controller-manager with
// only the namespace, serviceaccount and garbage-collector controllers. The two components are
// the upstream programs, built next to this one (cmd/), and run as child processes. Once
// /readyz answers and the controller manager has created the default ServiceAccount, it writes
// a kubeconfig for a system:masters client and prints "READY <url>" on stdout. It stops on
// SIGTERM/SIGINT or, with --exit-on-stdin-eof, when its parent closes stdin (or dies), stops
// the components, and removes its data directory (--data-dir, which may also hold the
// kubeconfig) on the way out.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

const (
	readyTimeout    = 180 * time.Second
	shutdownTimeout = 20 * time.Second
)

func main() {
	kubeconfigOut := flag.String("kubeconfig-out", "", "where to write the client kubeconfig (required)")
	dataDir := flag.String("data-dir", "", "work directory, created if missing and removed on exit (default: a new temporary directory)")
	exitOnStdinEOF := flag.Bool("exit-on-stdin-eof", false, "stop when stdin reaches end of file (parent gone)")
	flag.Parse()
	if *kubeconfigOut == "" {
		fmt.Fprintln(os.Stderr, "testapiserver: --kubeconfig-out is required")
		os.Exit(2)
	}
	if err := run(*kubeconfigOut, *dataDir, *exitOnStdinEOF); err != nil {
		fmt.Fprintf(os.Stderr, "testapiserver: %v\n", err)
		os.Exit(1)
	}
}

func run(kubeconfigOut, dataDir string, exitOnStdinEOF bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// When the parent dies, writes to our stdout/stderr pipes fail; without this Go would die of
	// SIGPIPE on the first log line of the shutdown and leave the data directory behind.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	if exitOnStdinEOF {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}

	dataDir, err := prepareDataDir(dataDir)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)

	apiServerBin, err := componentBinary("kube-apiserver")
	if err != nil {
		return err
	}
	controllerManagerBin, err := componentBinary("kube-controller-manager")
	if err != nil {
		return err
	}

	p, err := newPKI()
	if err != nil {
		return err
	}
	tlsFiles, err := p.writeFiles(dataDir)
	if err != nil {
		return fmt.Errorf("write certificates: %w", err)
	}

	etcd, etcdURL, err := startEtcd(dataDir)
	if err != nil {
		return err
	}
	defer etcd.Close()

	port, err := freeLoopbackPort()
	if err != nil {
		return fmt.Errorf("find a free port: %w", err)
	}
	serverURL := "https://127.0.0.1:" + strconv.Itoa(port)
	apiServer, err := startComponent("kube-apiserver", apiServerBin,
		kubeAPIServerArgs(apiServerArgs{etcdURL: etcdURL, port: port, tls: tlsFiles}), os.Stderr)
	if err != nil {
		return err
	}
	defer apiServer.stop(shutdownTimeout)

	client, err := adminClient(p)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "kube-apiserver /readyz", apiServer, func() bool {
		return getOK(client, serverURL+"/readyz")
	}); err != nil {
		return err
	}

	// The controller manager reads the same admin kubeconfig the tests get.
	adminKubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	if err := writeClientKubeconfig(adminKubeconfig, serverURL, p); err != nil {
		return fmt.Errorf("write admin kubeconfig: %w", err)
	}
	controllerManager, err := startComponent("kube-controller-manager", controllerManagerBin,
		kubeControllerManagerArgs(adminKubeconfig), os.Stderr)
	if err != nil {
		return err
	}
	// Deferred after the API server: stopped first.
	defer controllerManager.stop(shutdownTimeout)

	// The serviceaccount controller creates "default" in every namespace: the controller
	// manager is up and its informers are running.
	if err := waitFor(ctx, "kube-controller-manager (the default ServiceAccount)", controllerManager, func() bool {
		return getOK(client, serverURL+"/api/v1/namespaces/default/serviceaccounts/default")
	}); err != nil {
		return err
	}

	if err := writeClientKubeconfig(kubeconfigOut, serverURL, p); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	fmt.Printf("READY %s\n", serverURL)

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-apiServer.done:
			return apiServer.exited()
		case <-controllerManager.done:
			return controllerManager.exited()
		}
	}
}

// prepareDataDir creates the work directory (a fresh temporary one when dir is empty).
func prepareDataDir(dir string) (string, error) {
	if dir == "" {
		created, err := os.MkdirTemp("", "swr-apiserver-")
		if err != nil {
			return "", fmt.Errorf("create data dir: %w", err)
		}
		return created, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create data dir: %w", err)
	}
	return dir, nil
}

// waitFor polls probe every 100 ms until it holds, the component exits, ctx ends, or
// readyTimeout passes.
func waitFor(ctx context.Context, what string, c *component, probe func() bool) error {
	deadline := time.After(readyTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if probe() {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("waiting for %s: %w", what, c.exited())
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, errStopped)
		case <-deadline:
			return fmt.Errorf("%s not ready after %s", what, readyTimeout)
		case <-tick.C:
		}
	}
}

func getOK(client *http.Client, url string) bool {
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// adminClient is an HTTP client with the system:masters certificate.
func adminClient(p *pki) (*http.Client, error) {
	cert, err := tls.X509KeyPair(p.client.certPEM, p.client.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load client certificate: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(p.ca.certPEM) {
		return nil, errors.New("load CA certificate")
	}
	return &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots},
		},
	}, nil
}
