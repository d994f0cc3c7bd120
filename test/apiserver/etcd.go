package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

const etcdStartTimeout = 60 * time.Second

// startEtcd runs a single-member etcd in dataDir on free loopback ports and returns it with
// the client URL the API server should use.
func startEtcd(dataDir string) (*embed.Etcd, string, error) {
	loopbackAnyPort := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg := embed.NewConfig()
	cfg.Name = "swr-test"
	cfg.Dir = filepath.Join(dataDir, "etcd")
	cfg.ListenClientUrls = []url.URL{loopbackAnyPort}
	cfg.AdvertiseClientUrls = []url.URL{loopbackAnyPort}
	cfg.ListenPeerUrls = []url.URL{loopbackAnyPort}
	cfg.AdvertisePeerUrls = []url.URL{loopbackAnyPort}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{"stderr"}
	cfg.UnsafeNoFsync = true // throw-away data: durability buys nothing and costs time

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd failed: %w", err)
	case <-time.After(etcdStartTimeout):
		e.Close()
		return nil, "", fmt.Errorf("etcd not ready after %s", etcdStartTimeout)
	}
	if len(e.Clients) == 0 {
		e.Close()
		return nil, "", fmt.Errorf("etcd has no client listener")
	}
	return e, "http://" + e.Clients[0].Addr().String(), nil
}
