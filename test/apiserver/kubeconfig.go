package main

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const contextName = "swr-test"

// writeClientKubeconfig writes, atomically, a kubeconfig for the system:masters client.
func writeClientKubeconfig(path, serverURL string, p *pki) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{
		Server:                   serverURL,
		CertificateAuthorityData: p.ca.certPEM,
	}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: p.client.certPEM,
		ClientKeyData:         p.client.keyPEM,
	}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	cfg.CurrentContext = contextName
	return writeAtomically(path, cfg)
}

func writeAtomically(path string, cfg *clientcmdapi.Config) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kubeconfig-*")
	if err != nil {
		return err
	}
	tmpPath := tmp.Name()
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := clientcmd.WriteToFile(*cfg, tmpPath); err != nil {
		_ = os.Remove(tmpPath)
		return err
	}
	return os.Rename(tmpPath, path)
}
