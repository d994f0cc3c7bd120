package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"swr/testapiserver/internal/parentwatch"
)

// serviceClusterIPRange is the virtual Service network; nothing routes it in tests.
const serviceClusterIPRange = "10.0.0.0/24"

// serviceAccountIssuer is the iss (and default audience) of TokenRequest tokens, as in a cluster.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// Controllers kube-controller-manager runs: enough for namespace deletion, the default
// ServiceAccount of each namespace, and ownerReference garbage collection.
const controllers = "namespace-controller,serviceaccount-controller,garbage-collector-controller"

// component is one upstream program (kube-apiserver, kube-controller-manager) run as a child.
type component struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	err   error
}

// componentBinary is the path of a component built next to this program.
func componentBinary(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate own binary: %w", err)
	}
	path := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s is missing next to %s (run test/apiserver/build.sh): %w", name, self, err)
	}
	return path, nil
}

// startComponent runs binary with args; its output goes to logs. It is tied to this process by
// a stdin pipe: when we close it, or die, the component shuts itself down (parentwatch).
func startComponent(name, binary string, args []string, logs io.Writer) (*component, error) {
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logs
	cmd.Stderr = logs
	cmd.Env = append(os.Environ(), parentwatch.EnvVar+"=1")
	// Its own process group: a Ctrl-C in the terminal reaches only us, and we stop it in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &component{name: name, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// exited reports why the component stopped; nil while it runs.
func (c *component) exited() error {
	select {
	case <-c.done:
		if c.err == nil {
			return fmt.Errorf("%s exited", c.name)
		}
		return fmt.Errorf("%s exited: %w", c.name, c.err)
	default:
		return nil
	}
}

// stop sends SIGTERM and waits; SIGKILL after timeout. stdin is closed last: its end of file
// would be a second termination request, which the components answer with an immediate exit.
func (c *component) stop(timeout time.Duration) {
	defer func() { _ = c.stdin.Close() }()
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(timeout):
		fmt.Fprintf(os.Stderr, "testapiserver: %s did not stop within %s; killing it\n", c.name, timeout)
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// freeLoopbackPort asks the kernel for a free port on 127.0.0.1. The port is free again when
// this returns; kube-apiserver binds it a moment later (a race no test run has lost yet).
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

type apiServerArgs struct {
	etcdURL string
	port    int
	tls     pkiFiles
}

// kubeAPIServerArgs are the flags of a loopback-only kube-apiserver with RBAC enforced and
// ServiceAccount tokens (TokenRequest) signed by our key.
func kubeAPIServerArgs(a apiServerArgs) []string {
	return []string{
		"--etcd-servers=" + a.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(a.port),
		// The default "lease" reconciler refuses a loopback advertise address.
		"--endpoint-reconciler-type=none",
		"--tls-cert-file=" + a.tls.serverCert,
		"--tls-private-key-file=" + a.tls.serverKey,
		"--client-ca-file=" + a.tls.caCert,
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + a.tls.saPub,
		"--service-account-signing-key-file=" + a.tls.saKey,
		"--service-cluster-ip-range=" + serviceClusterIPRange,
		"--allow-privileged=true",
		// Pods are never created here; the plugin would only wait for default ServiceAccounts.
		"--disable-admission-plugins=ServiceAccount",
		"--profiling=false",
		"--v=0",
	}
}

// kubeControllerManagerArgs runs only the controllers tests rely on, as the admin, with no
// serving port and no leader election.
func kubeControllerManagerArgs(adminKubeconfig string) []string {
	return []string{
		"--kubeconfig=" + adminKubeconfig,
		"--controllers=" + controllers,
		"--leader-elect=false",
		"--secure-port=0",
		"--profiling=false",
		"--v=0",
	}
}

var errStopped = errors.New("stopped before the cluster was ready")
