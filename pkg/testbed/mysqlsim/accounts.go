package mysqlsim

import (
	"crypto/sha1"
	"net"
	"sort"
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/pingcap/tidb/pkg/parser/auth"
)

// The account store: what MySQL keeps in mysql.user, mysql.db,
// mysql.tables_priv and mysql.global_grants (manual: "Grant Tables",
// "Account Names", "Password Management"). It lives in the state, is
// written to the checkpoint and journal like the data, is copied by CLONE
// (which copies the mysql schema), and changes only through account
// statements (grants.go) or, at first boot, Config.Users.

// account is one 'user'@'host' with its authentication and privileges.
type account struct {
	user, host string
	plugin     string
	// authString is mysql.user.authentication_string: '$A$005$' + salt +
	// SHA-256 crypt for caching_sha2_password, '*' + hex SHA1(SHA1(pw))
	// for mysql_native_password, empty for no password. No plaintext is
	// kept anywhere.
	authString string
	// secondary is the second password kept by ALTER USER ... RETAIN
	// CURRENT PASSWORD (mysql.user.User_attributes
	// additional_password); empty when there is none.
	secondary  string
	locked     bool
	pwChanged  time.Time
	global     privSet // static global privileges (ON *.*)
	globalWith bool    // WITH GRANT OPTION at the global level
	dynamic    map[string]bool
	dbs        map[string]*levelGrant // db name -> ON db.*
	tables     map[string]*levelGrant // db + "." + table -> ON db.table
	// restrictions are the partial revokes of global privileges
	// (mysql.user.User_attributes "Restrictions"; partialrevokes.go).
	restrictions restrictionSet
}

// levelGrant is the privileges of one database or table grant.
type levelGrant struct {
	privs privSet
	with  bool
}

type privSet map[string]bool

// accountSet is every account, keyed by accountKey.
type accountSet map[string]*account

func accountKey(user, host string) string { return user + "@" + strings.ToLower(host) }

func (a *account) key() string { return accountKey(a.user, a.host) }

func newAccount(user, host string) *account {
	return &account{
		user: user, host: host, plugin: CachingSHA2Password, pwChanged: time.Now().UTC().Truncate(time.Second),
		global: privSet{}, dynamic: map[string]bool{}, dbs: map[string]*levelGrant{}, tables: map[string]*levelGrant{},
		restrictions: restrictionSet{},
	}
}

// hashPassword is the authentication string MySQL stores for password
// under plugin.
func hashPassword(plugin, password string) string {
	if password == "" {
		return ""
	}
	if plugin == NativePassword {
		return gomysql.EncodePasswordHex(gomysql.NativePasswordHash([]byte(password)))
	}
	return auth.NewHashPassword(password, CachingSHA2Password)
}

// passwordMatches reports whether password (plaintext, as full
// authentication receives it) is one of the account's passwords.
func (a *account) passwordMatches(password string) bool {
	for _, h := range a.authStrings() {
		if matchAuthString(a.plugin, h, password) {
			return true
		}
	}
	return false
}

// authStrings is the primary and, if retained, the secondary password.
func (a *account) authStrings() []string {
	if a.secondary != "" {
		return []string{a.authString, a.secondary}
	}
	return []string{a.authString}
}

func matchAuthString(plugin, authString, password string) bool {
	if authString == "" || password == "" {
		return authString == password
	}
	if plugin == NativePassword {
		return authString == hashPassword(NativePassword, password)
	}
	ok, err := auth.CheckHashingPassword([]byte(authString), password, CachingSHA2Password)
	return ok && err == nil
}

// nativeStage2 decodes a mysql_native_password authentication string to
// SHA1(SHA1(password)), what the scramble is checked against.
func nativeStage2(authString string) []byte {
	b, err := gomysql.DecodePasswordHex(authString)
	if err != nil || len(b) != sha1.Size {
		return nil
	}
	return b
}

func (set accountSet) clone() accountSet {
	out := accountSet{}
	for k, a := range set {
		out[k] = a.clone()
	}
	return out
}

func (a *account) clone() *account {
	b := *a
	b.global = copyPrivs(a.global)
	b.dynamic = map[string]bool{}
	for p, w := range a.dynamic {
		b.dynamic[p] = w
	}
	b.dbs, b.tables = copyLevels(a.dbs), copyLevels(a.tables)
	b.restrictions = a.restrictions.clone()
	return &b
}

func copyPrivs(p privSet) privSet {
	out := privSet{}
	for k, v := range p {
		out[k] = v
	}
	return out
}

func copyLevels(m map[string]*levelGrant) map[string]*levelGrant {
	out := map[string]*levelGrant{}
	for k, g := range m {
		out[k] = &levelGrant{privs: copyPrivs(g.privs), with: g.with}
	}
	return out
}

// cloneAccounts is a deep copy of the accounts, for a clone snapshot
// (contract 4: CLONE copies the mysql schema).
func (st *state) cloneAccounts() accountSet { return st.accounts.clone() }

// installAccounts replaces the accounts, as a clone's recipient does.
func (st *state) installAccounts(set accountSet) { st.accounts = set.clone() }

// lookupAccount returns the account a client from clientHost logging in as
// user gets: of the accounts named user whose host matches, the most
// specific, as MySQL sorts mysql.user (literal host names and addresses
// before patterns, '%' last; manual "Access Control, Stage 1: Connection
// Verification").
func (set accountSet) lookupAccount(user, clientHost string) *account {
	var cands []*account
	for _, a := range set {
		if a.user == user && hostMatches(a.host, clientHost) {
			cands = append(cands, a)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	sort.Slice(cands, func(i, j int) bool { return hostRank(cands[i].host) > hostRank(cands[j].host) })
	return cands[0]
}

// hostMatches matches an account's host part against a client address. A
// loopback client (the only kind the simulator accepts) also matches
// 'localhost', as MySQL resolves 127.0.0.1 to localhost with
// skip_name_resolve=OFF. Patterns use LIKE's % and _.
func hostMatches(pattern, clientHost string) bool {
	pattern = strings.ToLower(pattern)
	names := []string{clientHost}
	if ip := net.ParseIP(clientHost); ip != nil && ip.IsLoopback() {
		names = append(names, "localhost")
	}
	for _, n := range names {
		if likeMatch(pattern, strings.ToLower(n)) {
			return true
		}
	}
	return false
}

// hostRank orders host parts from most to least specific.
func hostRank(h string) int {
	i := strings.IndexAny(h, "%_")
	if i < 0 {
		return 1 << 20
	}
	return i // more literal characters before the first wildcard rank higher
}

// Role shorthands of Config.Users (contract 6): the GRANT statements an
// init file would run for them.
var roleGrants = map[Role][]string{
	// What the operator's account gets (seed 004, "Credentials And TLS").
	RoleAdmin: {"GRANT ALL PRIVILEGES ON *.* TO %s WITH GRANT OPTION"},
	// Data privileges only.
	RoleApp: {"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, CREATE TEMPORARY TABLES, LOCK TABLES, CREATE VIEW, SHOW VIEW, EXECUTE ON *.* TO %s"},
	// Streaming the binary log, reading replication status, being a clone donor.
	RoleReplication: {"GRANT REPLICATION SLAVE, REPLICATION CLIENT, BACKUP_ADMIN, CLONE_ADMIN ON *.* TO %s"},
}

// firstBootAccounts creates the configured accounts as 'name'@'%' with their
// role's grants, as an init file run at the first start would.
func firstBootAccounts(users []User) accountSet {
	set := accountSet{}
	for _, u := range users {
		plugin := u.Plugin
		if plugin == "" {
			plugin = CachingSHA2Password
		}
		a := newAccount(u.Name, "%")
		a.plugin, a.authString = plugin, hashPassword(plugin, u.Password)
		set[a.key()] = a
		for _, g := range roleGrants[u.Role] {
			stmt, err := parseAccountStmt(strings.ReplaceAll(g, "%s", quoteString(u.Name)+"@'%'"))
			if err == nil {
				_ = set.applyGrant(stmt)
			}
		}
	}
	return set
}

// diskAccount is an account in the checkpoint (the mysql schema's tables).
type diskAccount struct {
	User       string                    `json:"user"`
	Host       string                    `json:"host"`
	Plugin     string                    `json:"plugin"`
	AuthString string                    `json:"authenticationString"`
	Secondary  string                    `json:"additionalPassword,omitempty"`
	Locked     bool                      `json:"accountLocked,omitempty"`
	PwChanged  int64                     `json:"passwordLastChanged"`
	Global     []string                  `json:"global,omitempty"`
	GlobalWith bool                      `json:"globalGrantOption,omitempty"`
	Dynamic    map[string]bool           `json:"dynamic,omitempty"` // privilege -> WITH GRANT OPTION
	DBs        map[string]diskLevelGrant `json:"db,omitempty"`
	Tables     map[string]diskLevelGrant `json:"tables,omitempty"`
	// Restrictions is User_attributes "Restrictions" (partial revokes).
	Restrictions []diskRestriction `json:"restrictions,omitempty"`
}

type diskLevelGrant struct {
	Privs []string `json:"privs"`
	With  bool     `json:"grantOption,omitempty"`
}

func toDiskAccounts(set accountSet) []diskAccount {
	out := make([]diskAccount, 0, len(set))
	for _, a := range set {
		d := diskAccount{User: a.user, Host: a.host, Plugin: a.plugin, AuthString: a.authString, Secondary: a.secondary,
			Locked: a.locked, PwChanged: a.pwChanged.Unix(), Global: privList(a.global), GlobalWith: a.globalWith,
			Dynamic: a.dynamic, DBs: toDiskLevels(a.dbs), Tables: toDiskLevels(a.tables),
			Restrictions: toDiskRestrictions(a.restrictions)}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User+"@"+out[i].Host < out[j].User+"@"+out[j].Host })
	return out
}

func fromDiskAccounts(ds []diskAccount) accountSet {
	set := accountSet{}
	for _, d := range ds {
		a := newAccount(d.User, d.Host)
		a.plugin, a.authString, a.secondary, a.locked = d.Plugin, d.AuthString, d.Secondary, d.Locked
		a.pwChanged, a.globalWith = time.Unix(d.PwChanged, 0).UTC(), d.GlobalWith
		for _, p := range d.Global {
			a.global[p] = true
		}
		for p, w := range d.Dynamic {
			a.dynamic[p] = w
		}
		a.dbs, a.tables = fromDiskLevels(d.DBs), fromDiskLevels(d.Tables)
		a.restrictions = fromDiskRestrictions(d.Restrictions)
		set[a.key()] = a
	}
	return set
}

func privList(p privSet) []string {
	out := make([]string, 0, len(p))
	for k, v := range p {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func toDiskLevels(m map[string]*levelGrant) map[string]diskLevelGrant {
	out := map[string]diskLevelGrant{}
	for k, g := range m {
		out[k] = diskLevelGrant{Privs: privList(g.privs), With: g.with}
	}
	return out
}

func fromDiskLevels(m map[string]diskLevelGrant) map[string]*levelGrant {
	out := map[string]*levelGrant{}
	for k, d := range m {
		g := &levelGrant{privs: privSet{}, with: d.With}
		for _, p := range d.Privs {
			g.privs[p] = true
		}
		out[k] = g
	}
	return out
}
