package playground

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/shipstream/bloodraven/pkg/devsitemap"
	"github.com/shipstream/bloodraven/pkg/siteaddr"
	"github.com/shipstream/bloodraven/pkg/testbed/faultproxy"
)

// links puts a fault proxy on every link between the operator and the
// sites, and between sidecars, by giving each process its own address map
// (each process reads its map once at start):
//
//	operator-mysql-<site>        operator -> the site's mysqld
//	operator-sidecar-<site>      operator -> the site's sidecar
//	sidecar-<site>-operator      the site's sidecar -> operator
//	sidecar-<a>-sidecar-<b>      sidecar a -> sidecar b
//
// Replication between simulated mysqlds is cut with the simulators' own
// partition fault instead.
type links struct {
	proxies map[string]*faultproxy.Proxy
	// operatorMap is the operator's map; sidecarMaps and sidecarOperator
	// are per site.
	operatorMap     string
	sidecarMaps     map[string]string
	sidecarOperator map[string]string
}

func (l *links) close() {
	for _, p := range l.proxies {
		_ = p.Close()
	}
}

func (l *links) add(name, target string) (string, error) {
	p, err := faultproxy.New(name, "127.0.0.1:0", target)
	if err != nil {
		return "", err
	}
	l.proxies[name] = p
	return p.Addr(), nil
}

// newLinks starts the proxies and writes the maps into dir.
func newLinks(dir, namespace, group string, sites []SitePlan, operatorAux string) (_ *links, err error) {
	l := &links{proxies: map[string]*faultproxy.Proxy{}, sidecarMaps: map[string]string{}, sidecarOperator: map[string]string{}}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	key := func(site string) siteaddr.SiteKey {
		return siteaddr.SiteKey{Namespace: namespace, Group: group, Site: site}
	}
	var opEntries []devsitemap.Entry
	for _, s := range sites {
		mysqlAddr, err := l.add("operator-mysql-"+s.Name, s.MySQLAddr)
		if err != nil {
			return nil, err
		}
		sidecarAddr, err := l.add("operator-sidecar-"+s.Name, s.SidecarAddr)
		if err != nil {
			return nil, err
		}
		opEntries = append(opEntries, devsitemap.Entry{Site: key(s.Name), MySQL: mysqlAddr, Sidecar: sidecarAddr})
		if l.sidecarOperator[s.Name], err = l.add("sidecar-"+s.Name+"-operator", operatorAux); err != nil {
			return nil, err
		}
	}
	if l.operatorMap, err = writeMap(filepath.Join(dir, "dev-site-addresses.operator"), opEntries); err != nil {
		return nil, err
	}
	for _, a := range sites {
		var entries []devsitemap.Entry
		for _, b := range sites {
			e := devsitemap.Entry{Site: key(b.Name), MySQL: b.MySQLAddr, Sidecar: b.SidecarAddr}
			if a.Name != b.Name {
				if e.Sidecar, err = l.add("sidecar-"+a.Name+"-sidecar-"+b.Name, b.SidecarAddr); err != nil {
					return nil, err
				}
			}
			entries = append(entries, e)
		}
		if l.sidecarMaps[a.Name], err = writeMap(filepath.Join(dir, "dev-site-addresses.sidecar-"+a.Name), entries); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func writeMap(path string, entries []devsitemap.Entry) (string, error) {
	m, err := devsitemap.New(entries...)
	if err != nil {
		return "", err
	}
	return path, m.WriteFile(path)
}

// Link returns the fault proxy of a link by name (see links), or nil when
// the playground runs without fault proxies.
func (p *Playground) Link(name string) *faultproxy.Proxy {
	if p.links == nil {
		return nil
	}
	return p.links.proxies[name]
}

// LinkNames lists the proxied links.
func (p *Playground) LinkNames() []string {
	if p.links == nil {
		return nil
	}
	var out []string
	for n := range p.links.proxies {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// IsolateSite sets every proxied link to or from site (operator and peer
// sidecars) to mode; faultproxy.Open heals them.
func (p *Playground) IsolateSite(site string, mode faultproxy.Mode) error {
	if p.links == nil {
		return fmt.Errorf("the playground runs without fault proxies (Config.FaultProxies)")
	}
	names := []string{"operator-mysql-" + site, "operator-sidecar-" + site, "sidecar-" + site + "-operator"}
	for _, o := range p.Sites {
		if o.Name != site {
			names = append(names, "sidecar-"+site+"-sidecar-"+o.Name, "sidecar-"+o.Name+"-sidecar-"+site)
		}
	}
	for _, n := range names {
		pr := p.links.proxies[n]
		if pr == nil {
			return fmt.Errorf("no link %s", n)
		}
		pr.Set(mode)
	}
	return nil
}
