package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a PEM-encoded certificate and its private key.
type keyPair struct {
	certPEM []byte
	keyPEM  []byte
}

// pki holds everything the server and its clients need: a throw-away CA, the serving
// certificate for 127.0.0.1/localhost, a client certificate in group system:masters, and the RSA
// key that signs ServiceAccount tokens (TokenRequest).
type pki struct {
	ca     keyPair
	server keyPair
	client keyPair
	// serviceAccountKeyPEM is the PKCS#1 RSA private key; the public half is derived from it.
	serviceAccountKeyPEM []byte
	serviceAccountPubPEM []byte
}

// pkiFiles are the paths the API server reads its TLS and token-signing material from.
type pkiFiles struct {
	caCert     string
	serverCert string
	serverKey  string
	saKey      string
	saPub      string
}

const certLifetime = 24 * time.Hour

func newPKI() (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	notBefore := time.Now().Add(-time.Hour)
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "swr-test-apiserver-ca"},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	ca, err := encodePair(caDER, caKey)
	if err != nil {
		return nil, err
	}

	server, err := issue(caCert, caKey, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "swr-test-apiserver"},
		NotBefore:    notBefore,
		NotAfter:     notBefore.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	})
	if err != nil {
		return nil, fmt.Errorf("issue serving certificate: %w", err)
	}
	client, err := issue(caCert, caKey, &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: "swr-test-admin", Organization: []string{"system:masters"}},
		NotBefore:    notBefore,
		NotAfter:     notBefore.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, fmt.Errorf("issue client certificate: %w", err)
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate service account signing key: %w", err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("marshal service account public key: %w", err)
	}
	return &pki{
		ca:                   ca,
		server:               server,
		client:               client,
		serviceAccountKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		serviceAccountPubPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
	}, nil
}

func issue(ca *x509.Certificate, caKey *ecdsa.PrivateKey, template *x509.Certificate) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return keyPair{}, err
	}
	return encodePair(der, key)
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (keyPair, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return keyPair{}, fmt.Errorf("marshal key: %w", err)
	}
	return keyPair{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// writeFiles stores the CA certificate, the serving pair and the token-signing keys under dir.
func (p *pki) writeFiles(dir string) (pkiFiles, error) {
	files := pkiFiles{
		caCert:     filepath.Join(dir, "ca.crt"),
		serverCert: filepath.Join(dir, "server.crt"),
		serverKey:  filepath.Join(dir, "server.key"),
		saKey:      filepath.Join(dir, "service-account.key"),
		saPub:      filepath.Join(dir, "service-account.pub"),
	}
	for path, data := range map[string][]byte{
		files.caCert:     p.ca.certPEM,
		files.serverCert: p.server.certPEM,
		files.serverKey:  p.server.keyPEM,
		files.saKey:      p.serviceAccountKeyPEM,
		files.saPub:      p.serviceAccountPubPEM,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return pkiFiles{}, err
		}
	}
	return files, nil
}
