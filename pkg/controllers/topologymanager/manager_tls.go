package topologymanager

import (
	"crypto/tls"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/mysql"
	"github.com/shipstream/bloodraven/pkg/render"
)

// TLS end to end (docs/tls.md). With spec.tls the manager connects to each
// site's mysqld with TLS only, trusting the TLS Secret's ca.crt (read
// through the Secret informer at every pass, so a renewed CA is used from
// the next pass on) and requiring the certificate to name the site's
// internal Service, whatever address the resolver dials. A refused
// certificate is never retried without TLS: the site is unreachable to the
// manager, and TLSReady plus a Warning Event say why.

// SecretKeyCA is the TLS Secret's CA bundle key (cert-manager's name).
const SecretKeyCA = "ca.crt"

// tlsFailure is a site's latest refused TLS connection.
type tlsFailure struct {
	cause mysql.TLSFailure
	text  string
}

// groupTLS is what the manager last saw of each site's TLS (guarded by
// Manager.mu): the sites whose certificate was refused, and the Secret's
// problem, if any.
type groupTLS struct {
	failed    map[string]tlsFailure
	secretErr string
}

// tlsState returns the group's TLS record (m.mu held).
func (p *mpass) tlsStateLocked() *groupTLS {
	if p.st.tls == nil {
		p.st.tls = &groupTLS{failed: map[string]tlsFailure{}}
	}
	return p.st.tls
}

// tlsCA reads ca.crt of spec.tls.secretName; nil without spec.tls.
func (p *mpass) tlsCA() ([]byte, error) {
	if p.g.Spec.TLS == nil {
		return nil, nil
	}
	name := p.g.Spec.TLS.SecretName
	inf := p.m.ctrl.informers.KubeFor(p.g.Namespace)
	var err error
	var ca []byte
	switch {
	case inf == nil:
		err = fmt.Errorf("namespace %s is not watched", p.g.Namespace)
	default:
		var sec *corev1.Secret
		if sec, err = inf.Core().V1().Secrets().Lister().Secrets(p.g.Namespace).Get(name); err == nil {
			if ca = sec.Data[SecretKeyCA]; len(ca) == 0 {
				err = fmt.Errorf("key %q is missing or empty", SecretKeyCA)
			}
		}
	}
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	st := p.tlsStateLocked()
	if err != nil {
		st.secretErr = fmt.Sprintf("spec.tls.secretName: Secret %s/%s: %v", p.g.Namespace, name, err)
		return nil, fmt.Errorf("%s (the operator does not connect without TLS)", st.secretErr)
	}
	st.secretErr = ""
	return ca, nil
}

// siteTLS is the client TLS configuration for a site, and a fingerprint
// that changes with the CA (the pool is reopened when it does); nil and ""
// without spec.tls.
func (p *mpass) siteTLS(site string) (*tls.Config, string, error) {
	ca, err := p.tlsCA()
	if err != nil || ca == nil {
		return nil, "", err
	}
	cfg, err := mysql.TLSConfig(ca, siteKey(p.g, site).InternalServiceFQDN())
	if err != nil {
		return nil, "", fmt.Errorf("spec.tls.secretName %s/%s: %w", p.g.Namespace, p.g.Spec.TLS.SecretName, err)
	}
	return cfg, mysql.CAFingerprint(ca), nil
}

// replicationCA is SOURCE_SSL_CA for a follower: the CA file of the TLS
// Secret as mounted in the mysqld container; "" without spec.tls.
func (p *mpass) replicationCA() string {
	if p.g.Spec.TLS == nil {
		return ""
	}
	return render.TLSDir + "/" + SecretKeyCA
}

// noteTLS records the outcome of a poll of site's mysqld: a refused
// certificate (with a Warning Event when the failure begins or its cause
// changes), or a poll that got through. Other failures (the site is down)
// say nothing about TLS and leave the record as it was.
func (p *mpass) noteTLS(site string, err error) {
	if p.g.Spec.TLS == nil {
		return
	}
	cause, refused := mysql.ClassifyTLS(err)
	if err != nil && !refused {
		return
	}
	p.m.mu.Lock()
	st := p.tlsStateLocked()
	prev, had := st.failed[site]
	if !refused {
		delete(st.failed, site)
		p.m.mu.Unlock()
		if had {
			p.log.Info("TLS verification succeeds again", "site", site)
		}
		return
	}
	f := tlsFailure{cause: cause, text: cause.Explain(siteKey(p.g, site).InternalServiceFQDN())}
	st.failed[site] = f
	p.m.mu.Unlock()
	if !had || prev.cause != cause {
		p.log.Warn("TLS verification failed", "site", site, "cause", string(cause), "err", err.Error())
		p.recordf(corev1.EventTypeWarning, v1alpha1.EventTLSVerificationFailed,
			"site %s refused over TLS: %s; the operator does not connect without TLS", site, f.text)
	}
}

// setTLSCondition writes TLSReady into o's status: absent without
// spec.tls, False naming each refused site and its cause, True otherwise.
func (p *mpass) setTLSCondition(o *v1alpha1.MysqlFailoverGroup) {
	if p.g.Spec.TLS == nil {
		apimeta.RemoveStatusCondition(&o.Status.Conditions, v1alpha1.ConditionTLSReady)
		return
	}
	p.m.mu.Lock()
	st := p.tlsStateLocked()
	secretErr := st.secretErr
	var parts []string
	for site, f := range st.failed {
		parts = append(parts, fmt.Sprintf("site %s: %s", site, f.text))
	}
	p.m.mu.Unlock()
	sort.Strings(parts)
	c := metav1.Condition{Type: v1alpha1.ConditionTLSReady, ObservedGeneration: o.Generation}
	switch {
	case secretErr != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonTLSSecretInvalid, secretErr
	case len(parts) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonTLSVerificationFailed
		c.Message = "TLS verification failed: " + strings.Join(parts, "; ")
	default:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonTLSVerified
		c.Message = fmt.Sprintf("every site reached answered over TLS with a certificate signed by a CA in %s of Secret %s and naming its internal Service",
			SecretKeyCA, p.g.Spec.TLS.SecretName)
	}
	apimeta.SetStatusCondition(&o.Status.Conditions, c)
}
