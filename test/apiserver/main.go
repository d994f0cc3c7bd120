// Command testapiserver runs a throw-away Kubernetes API server for tests: embedded etcd plus
// the apiextensions-apiserver (CRDs and custom resources, no core API). Once /healthz answers
// it writes a kubeconfig for a system:masters client and prints "READY <url>" on stdout. It
// stops on SIGTERM/SIGINT or, with --exit-on-stdin-eof, when its parent closes stdin (or dies),
// and removes its data directory (--data-dir, which may also hold the kubeconfig) on the way out.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

const (
	healthTimeout   = 120 * time.Second
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

	p, err := newPKI()
	if err != nil {
		return err
	}
	tlsFiles, err := p.writeFiles(dataDir)
	if err != nil {
		return fmt.Errorf("write certificates: %w", err)
	}
	unreachable := filepath.Join(dataDir, "unreachable.kubeconfig")
	if err := writeUnreachableKubeconfig(unreachable); err != nil {
		return fmt.Errorf("write placeholder kubeconfig: %w", err)
	}

	etcd, etcdURL, err := startEtcd(dataDir)
	if err != nil {
		return err
	}
	defer etcd.Close()

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	serverURL := "https://" + listener.Addr().String()

	serverCtx, cancelServer := context.WithCancel(context.Background())
	defer cancelServer()
	served := make(chan error, 1)
	go func() {
		served <- runAPIServer(serverCtx, apiServerConfig{
			etcdURL:               etcdURL,
			listener:              listener,
			tls:                   tlsFiles,
			unreachableKubeconfig: unreachable,
			stdout:                os.Stderr,
			stderr:                os.Stderr,
		})
	}()

	if err := waitHealthy(ctx, serverURL, p, served); err != nil {
		cancelServer()
		return err
	}
	if err := writeClientKubeconfig(kubeconfigOut, serverURL, p); err != nil {
		cancelServer()
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	fmt.Printf("READY %s\n", serverURL)

	select {
	case err := <-served:
		if err == nil {
			err = errors.New("api server stopped unexpectedly")
		}
		return err
	case <-ctx.Done():
	}
	cancelServer()
	select {
	case <-served:
	case <-time.After(shutdownTimeout):
		fmt.Fprintf(os.Stderr, "testapiserver: api server did not stop within %s\n", shutdownTimeout)
	}
	return nil
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

// waitHealthy polls /healthz with the client certificate until it answers 200.
func waitHealthy(ctx context.Context, serverURL string, p *pki, served <-chan error) error {
	client, err := healthClient(p)
	if err != nil {
		return err
	}
	deadline := time.After(healthTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get(serverURL + "/healthz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-served:
			return fmt.Errorf("api server exited before it was healthy: %v", err)
		case <-ctx.Done():
			return errors.New("stopped before the api server was healthy")
		case <-deadline:
			return fmt.Errorf("api server not healthy after %s", healthTimeout)
		case <-tick.C:
		}
	}
}

func healthClient(p *pki) (*http.Client, error) {
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
