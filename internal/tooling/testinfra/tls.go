package testinfra

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/embedded"
	"github.com/stepwise-run/stepwise/internal/kafka"
)

// Certs is a private CA and what it signed for one test: a server
// certificate for 127.0.0.1 and localhost, and a client certificate, as PEM
// files (for flags and servers) and as TLS configurations.
type Certs struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string // PEM files
	Server                                           *tls.Config
}

// NewCerts makes a CA and its certificates in t's temp dir.
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert, caDER := newCert(t, "stepwise test CA", nil, nil, true)
	c := &Certs{CA: writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)}
	for _, who := range []string{"server", "client"} {
		key, _, der := newCert(t, "stepwise test "+who, caCert, caKey, false)
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		cert := writePEM(t, dir, who+".pem", "CERTIFICATE", der)
		keyFile := writePEM(t, dir, who+"-key.pem", "EC PRIVATE KEY", keyDER)
		if who == "server" {
			c.ServerCert, c.ServerKey = cert, keyFile
		} else {
			c.ClientCert, c.ClientKey = cert, keyFile
		}
	}
	pair, err := tls.LoadX509KeyPair(c.ServerCert, c.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	c.Server = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	return c
}

// Client returns a client TLS configuration that trusts the CA and
// presents the client certificate.
func (c *Certs) Client(t testing.TB) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(c.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	pair, err := tls.LoadX509KeyPair(c.ClientCert, c.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

func newCert(t testing.TB, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, ca bool) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		tmpl.ExtKeyUsage, tmpl.DNSNames, tmpl.IPAddresses = nil, nil, nil
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// KafkaSecure starts an embedded broker that speaks only TLS, with certs'
// server certificate, and requires a SASL login (login is a superuser); it
// returns the broker's address.
func KafkaSecure(t testing.TB, certs *Certs, login kafka.SASL) []string {
	t.Helper()
	k, err := embedded.StartKafka("127.0.0.1:0", embedded.WithTLS(certs.Server), embedded.WithSASL(login))
	if err != nil {
		t.Fatalf("start a TLS and SASL broker: %v", err)
	}
	t.Cleanup(k.Close)
	return k.Addrs()
}

// RedisTLS starts a private redis-server that listens only for TLS, with
// certs' server certificate, asks clients for a certificate signed by the
// CA (tls-auth-clients), and lets in only ACL user with password (the
// default user is off). It returns a rediss:// URL without the login.
func RedisTLS(t testing.TB, certs *Certs, user, password string) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	client := certs.Client(t)
	addr := startRedisServer(t, nil, func(port int, dir string) []string {
		return []string{"--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey, "--tls-ca-cert-file", certs.CA,
			"--user", "default", "off", "--user", user, "on", ">" + password, "~*", "&*", "+@all"}
	}, func(addr string, _ int) bool { return waitTLS(addr, client, 5*time.Second) }) // a server of another test's CA would refuse client
	return "rediss://" + addr + "/0"
}

// waitTLS waits until a TLS handshake with addr succeeds.
func waitTLS(addr string, cfg *tls.Config, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		conn, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
		cancel()
		if err == nil {
			_ = conn.Close()
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
