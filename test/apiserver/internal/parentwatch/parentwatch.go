// Package parentwatch ties a component's life to the test server that started it.
package parentwatch

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// exitGrace is how long a component may take to shut down after its parent is gone. Without
// etcd (which died with the parent) kube-apiserver's graceful shutdown can wait forever.
const exitGrace = 10 * time.Second

// EnvVar is set by the test server for the components it starts, with stdin a pipe it holds.
const EnvVar = "SWR_TERMINATE_ON_STDIN_EOF"

// TerminateOnStdinEOF, when EnvVar is "1", sends this process SIGTERM once stdin reaches end of
// file (the parent closed the pipe or died), so the component shuts down through its own signal
// handling, and exits after exitGrace if it has not by then. SIGPIPE is ignored so a dead
// parent's closed stdout/stderr cannot kill it mid-shutdown.
func TerminateOnStdinEOF() {
	if os.Getenv(EnvVar) != "1" {
		return
	}
	signal.Ignore(syscall.SIGPIPE)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(exitGrace)
		fmt.Fprintf(os.Stderr, "parentwatch: still running %s after the parent left; exiting\n", exitGrace)
		os.Exit(1)
	}()
}
