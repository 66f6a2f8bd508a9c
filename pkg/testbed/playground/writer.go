package playground

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	driver "github.com/go-sql-driver/mysql"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
)

// Writer is an application that writes continuously to whatever the
// group's DNS name points at, as a client following DNS would: it reads the
// external-dns DNSEndpoint's target, maps that address to the site whose
// loadBalancerIP it is, and writes there. Every write carries a GTID of its
// own UUID (gtid_next), so each acknowledged write can be looked for on the
// final primary.
type Writer struct {
	p        *Playground
	user     string
	password string
	uuid     string
	interval time.Duration

	mu     sync.Mutex
	next   int64
	acked  gtid.Set
	acks   []Ack
	target string // site written to now
	dbs    map[string]*sql.DB
	tls    *tls.Config // with spec.tls: the group's DNS name verified (certs.go)
}

// Ack is one acknowledged write.
type Ack struct {
	At   time.Time
	Site string
	GNO  int64
}

// WriterProgram is the writer's MySQL program_name, so a partition can
// spare (or cut) it.
const WriterProgram = "bloodraven-e2e-writer"

// NewWriter builds a writer with the operator account (gtid_next needs
// SYSTEM_VARIABLES_ADMIN); Run starts it.
func (p *Playground) NewWriter(ctx context.Context, interval time.Duration) (*Writer, error) {
	g, err := p.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.Namespace).Get(ctx, p.Group, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sec, err := p.CP.Client().CoreV1().Secrets(p.Namespace).Get(ctx, g.Spec.Credentials.OperatorSecretName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	tlsCfg, err := p.MySQLClientTLS()
	if err != nil {
		return nil, err
	}
	return &Writer{p: p, user: string(sec.Data["username"]), password: string(sec.Data["password"]),
		uuid: NewUUID(), interval: interval, next: 1, dbs: map[string]*sql.DB{}, tls: tlsCfg}, nil
}

var dnsEndpointGVR = schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}

// DNSSite is the site the group's DNS name points at now.
func (p *Playground) DNSSite(ctx context.Context) (string, error) {
	obj, err := p.dyn.Resource(dnsEndpointGVR).Namespace(p.Namespace).Get(ctx, p.Group+"-dns", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	eps, _, _ := unstructuredSlice(obj.Object, "spec", "endpoints")
	if len(eps) == 0 {
		return "", errors.New("DNSEndpoint has no endpoints")
	}
	ep, _ := eps[0].(map[string]any)
	targets, _ := ep["targets"].([]any)
	if len(targets) != 1 {
		return "", fmt.Errorf("DNSEndpoint has %d targets", len(targets))
	}
	ip, _ := targets[0].(string)
	g, err := p.Ship.ShipstreamV1alpha1().MysqlFailoverGroups(p.Namespace).Get(ctx, p.Group, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	for _, s := range g.Spec.Sites {
		if s.LoadBalancerIP == ip {
			return s.Name, nil
		}
	}
	return "", fmt.Errorf("DNS target %s is no site's loadBalancerIP", ip)
}

// Run writes every interval until ctx ends, following DNS (re-read every
// 200 ms). Errors are expected during a failover and only counted.
func (w *Writer) Run(ctx context.Context) {
	go w.followDNS(ctx)
	for ctx.Err() == nil {
		w.mu.Lock()
		site := w.target
		w.mu.Unlock()
		if site != "" {
			w.writeOne(ctx, site)
		}
		select {
		case <-ctx.Done():
		case <-time.After(w.interval):
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, db := range w.dbs {
		db.Close()
	}
}

func (w *Writer) followDNS(ctx context.Context) {
	for ctx.Err() == nil {
		if site, err := w.p.DNSSite(ctx); err == nil {
			w.mu.Lock()
			w.target = site
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (w *Writer) db(site string) (*sql.DB, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if db := w.dbs[site]; db != nil {
		return db, nil
	}
	plan, ok := w.p.Site(site)
	if !ok {
		return nil, fmt.Errorf("no site %s", site)
	}
	cfg, err := mysql.Options{Addr: plan.MySQLAddr, User: w.user, Password: w.password, Program: WriterProgram, TLS: w.tls,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second}.DriverConfig()
	if err != nil {
		return nil, err
	}
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(5 * time.Second)
	if _, err := db.Exec("CREATE DATABASE IF NOT EXISTS bloodraven_e2e"); err == nil {
		_, _ = db.Exec("CREATE TABLE IF NOT EXISTS bloodraven_e2e.writes (gno BIGINT, site VARCHAR(20))")
	}
	w.dbs[site] = db
	return db, nil
}

// writeOne commits one row with the next GTID; numbers are never reused.
func (w *Writer) writeOne(ctx context.Context, site string) {
	db, err := w.db(site)
	if err != nil {
		return
	}
	w.mu.Lock()
	gno := w.next
	w.next++
	w.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := db.Conn(wctx)
	if err != nil {
		return
	}
	defer conn.Close()
	if _, err := conn.ExecContext(wctx, fmt.Sprintf("SET gtid_next = '%s:%d'", w.uuid, gno)); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrInvalidConn })
		return
	}
	_, err = conn.ExecContext(wctx, fmt.Sprintf("INSERT INTO bloodraven_e2e.writes VALUES (%d, '%s')", gno, site))
	_, _ = conn.ExecContext(wctx, "SET gtid_next = 'AUTOMATIC'")
	if err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrInvalidConn }) // never reuse a doubtful session
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acked = w.acked.Add(gtid.GTID{UUID: w.uuid, GNO: gno})
	w.acks = append(w.acks, Ack{At: time.Now(), Site: site, GNO: gno})
}

// Acks returns every acknowledged write, in order.
func (w *Writer) Acks() []Ack {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Ack(nil), w.acks...)
}

// Acknowledged is the GTID set of every acknowledged write.
func (w *Writer) Acknowledged() gtid.Set {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

// Gap is the write outage of a failover to site to that began at t: from
// the last write acknowledged by any other site to the first acknowledged
// by to after t. (A write acknowledged by the old primary just after t, in
// the instant before the fault took effect, counts as before the outage.)
// ok is false while to has acknowledged nothing after t.
func Gap(acks []Ack, t time.Time, to string) (gap time.Duration, ok bool) {
	var before *Ack
	for i := range acks {
		a := &acks[i]
		if a.Site != to || !a.At.After(t) {
			before = a
			continue
		}
		if before == nil {
			return 0, false
		}
		return a.At.Sub(before.At), true
	}
	return 0, false
}

// GapUntilBack is the write outage of a drill whose failover was abandoned,
// so site (the old primary) took writes again once status showed it active
// at back: from the write acknowledged just before site's first after back
// (the last before the outage) to that first one. ok is false while site
// has acknowledged nothing since back.
func GapUntilBack(acks []Ack, back time.Time, site string) (gap time.Duration, ok bool) {
	for i := range acks {
		a := &acks[i]
		if a.Site != site || a.At.Before(back) {
			continue
		}
		if i == 0 {
			return 0, false
		}
		return a.At.Sub(acks[i-1].At), true
	}
	return 0, false
}

// Missing connects to site and returns the acknowledged GTIDs it lacks.
func (w *Writer) Missing(ctx context.Context, site string) (gtid.Set, error) {
	return missingFrom(w.Acknowledged, func() (gtid.Set, error) { return w.Executed(ctx, site) })
}

// missingFrom is acknowledged minus executed, with the acknowledgements
// taken before the server is read: a write the running writer acknowledges
// during or after the read was committed after gtid_executed was read, and
// would count as missing although the server holds it.
func missingFrom(acknowledged func() gtid.Set, executed func() (gtid.Set, error)) (gtid.Set, error) {
	acked := acknowledged()
	held, err := executed()
	if err != nil {
		return gtid.Set{}, err
	}
	return acked.Subtract(held), nil
}

// Executed connects to site and returns its gtid_executed.
func (w *Writer) Executed(ctx context.Context, site string) (gtid.Set, error) {
	c, err := w.open(site)
	if err != nil {
		return gtid.Set{}, err
	}
	defer c.Close()
	o, err := c.Observe(ctx)
	if err != nil {
		return gtid.Set{}, err
	}
	return o.GTIDExecuted, nil
}

// open connects to site's mysqld with the writer's account, for one
// administrative read or write outside the write loop.
func (w *Writer) open(site string) (*mysql.Client, error) {
	plan, ok := w.p.Site(site)
	if !ok {
		return nil, fmt.Errorf("no site %s", site)
	}
	return mysql.Open(mysql.Options{Addr: plan.MySQLAddr, User: w.user, Password: w.password, Program: WriterProgram, TLS: w.tls,
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
}

func unstructuredSlice(obj map[string]any, fields ...string) ([]any, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = m[f]
	}
	s, ok := cur.([]any)
	return s, ok, nil
}

// ApplyDivergent commits, on the active site, every transaction of set (a
// follower's status.sites[].divergentGtid) that the active site lacks, as
// the runbook's "apply them to the active site" does: the returning old
// primary then holds nothing the active site lacks and is repointed. The
// playground's data is the writer's rows, so each GTID is committed as one
// such row.
func (w *Writer) ApplyDivergent(ctx context.Context, active, set string) (int, error) {
	divergent, err := gtid.Parse(set)
	if err != nil {
		return 0, fmt.Errorf("divergentGtid %q: %w", set, err)
	}
	c, err := w.open(active)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	conn, err := c.DB().Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS bloodraven_e2e"); err != nil {
		return 0, err
	}
	if _, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS bloodraven_e2e.writes (gno BIGINT, site VARCHAR(20))"); err != nil {
		return 0, err
	}
	n := 0
	for _, sid := range divergent.SIDs() {
		for _, iv := range divergent.Intervals(sid) {
			for gno := iv.Start; gno <= iv.End; gno++ {
				g := gtid.GTID{UUID: sid.UUID, Tag: sid.Tag, GNO: gno}
				if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET gtid_next = '%s'", g)); err != nil {
					return n, err
				}
				_, err := conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO bloodraven_e2e.writes VALUES (%d, 'recovered')", gno))
				_, _ = conn.ExecContext(ctx, "SET gtid_next = 'AUTOMATIC'")
				if err != nil {
					return n, err
				}
				n++
			}
		}
	}
	return n, nil
}
