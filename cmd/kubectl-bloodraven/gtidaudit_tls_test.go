package main

import (
	"crypto/tls"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/testca"
)

// sampleTLS is the sample group's spec.tls Secret (orders-tls) and the
// server side of it: one certificate naming every site's internal Service,
// so gtid-audit verifies each site as the operator does.
func sampleTLS(t *testing.T, ns string) (*tls.Config, *corev1.Secret) {
	t.Helper()
	ca, err := testca.New("gtid-audit test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, site := range []string{"iad", "pdx", "reader"} {
		names = append(names, siteaddr.SiteKey{Namespace: ns, Group: "orders", Site: site}.InternalServiceFQDN())
	}
	pair, err := ca.Issue(names...)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-tls", Namespace: ns}, Type: corev1.SecretTypeTLS, Data: ca.SecretData(pair)}
}
