package playground

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
)

// SitePlan is where one site's data plane listens: fixed before anything
// starts, because every process reads the site-address map once at start.
type SitePlan struct {
	Name     string
	Zone     string
	ServerID int64
	// ServerUUID is derived from namespace/group/site, so a restarted
	// simulator keeps its identity.
	ServerUUID string
	// NodeLabels are the labels of the site's fake node: its zone plus the
	// site's taintNodeSelector, so the operator's taints land on it.
	NodeLabels  map[string]string
	MySQLAddr   string
	SidecarAddr string
	// ControlAddr is the simulator's fault-control HTTP API.
	ControlAddr string
	// PodIP is the address reported for the site's pod (and its node): a
	// made-up, non-loopback one, since Endpoints refuse loopback addresses.
	PodIP string
}

// ControlURL is the base URL of the simulator's fault API.
func (s SitePlan) ControlURL() string { return "http://" + s.ControlAddr }

// loadGroup reads a MysqlFailoverGroup manifest.
func loadGroup(path string) (*v1alpha1.MysqlFailoverGroup, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var g v1alpha1.MysqlFailoverGroup
	if err := yaml.UnmarshalStrict(b, &g); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(g.Spec.Sites) == 0 {
		return nil, fmt.Errorf("%s: spec.sites is empty", path)
	}
	return &g, nil
}

// planSites gives every site of g three free loopback ports.
func planSites(namespace string, g *v1alpha1.MysqlFailoverGroup) ([]SitePlan, error) {
	var out []SitePlan
	for i, s := range g.Spec.Sites {
		ports := make([]int, 3)
		for i := range ports {
			p, err := framework.FreePort()
			if err != nil {
				return nil, err
			}
			ports[i] = p
		}
		labels := map[string]string{"topology.kubernetes.io/zone": s.Zone}
		for k, v := range s.TaintNodeSelector {
			labels[k] = v
		}
		out = append(out, SitePlan{
			Name: s.Name, Zone: s.Zone, ServerID: s.ServerID,
			ServerUUID:  uuidFor(namespace + "/" + g.Name + "/" + s.Name),
			NodeLabels:  labels,
			MySQLAddr:   fmt.Sprintf("127.0.0.1:%d", ports[0]),
			SidecarAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
			ControlAddr: fmt.Sprintf("127.0.0.1:%d", ports[2]),
			PodIP:       fmt.Sprintf("10.244.%d.10", i+1),
		})
	}
	return out, nil
}

// addressMap is the development site-address map of the plan.
func addressMap(namespace, group string, sites []SitePlan) (*devsitemap.Map, error) {
	var entries []devsitemap.Entry
	for _, s := range sites {
		entries = append(entries, devsitemap.Entry{
			Site:  siteaddr.SiteKey{Namespace: namespace, Group: group, Site: s.Name},
			MySQL: s.MySQLAddr, Sidecar: s.SidecarAddr,
		})
	}
	return devsitemap.New(entries...)
}

func uuidFor(s string) string {
	b := sha256.Sum256([]byte(s))
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// NewUUID returns a random version-4 UUID (deploy API operation ids).
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
