package mysqlsim

import (
	"strings"
	"testing"
)

// TestAccountStatementTextRoundTrips: the logged text of every account
// statement parses back to the same statement, whatever bytes the random
// salt of the authentication string holds (the replica and the journal
// apply the text).
func TestAccountStatementTextRoundTrips(t *testing.T) {
	for i := 0; i < 100; i++ {
		for _, q := range []string{
			"CREATE USER 'u'@'%' IDENTIFIED BY 'pw'",
			"ALTER USER 'u'@'%' IDENTIFIED BY 'pw2' RETAIN CURRENT PASSWORD",
			"CREATE USER IF NOT EXISTS 'n'@'localhost' IDENTIFIED WITH mysql_native_password BY 'x' ACCOUNT LOCK",
		} {
			st, err := parseAccountStmt(q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			st.hashPasswords(accountSet{})
			text := st.text()
			back, err := parseAccountStmt(text)
			if err != nil {
				t.Fatalf("logged text %q does not parse: %v", text, err)
			}
			if back.text() != text || *back.users[0].authString != *st.users[0].authString {
				t.Fatalf("round trip changed the statement:\n%q\n%q", text, back.text())
			}
		}
	}
}

// TestCheckpointAccounts: accounts round-trip through the checkpoint; a
// checkpoint written before accounts were stored gets the configured ones,
// one that has them never does (the configuration no longer matters).
func TestCheckpointAccounts(t *testing.T) {
	cfg := Config{Users: []User{{Name: "op", Password: "pw", Role: RoleAdmin}}}
	st := newState(cfg)
	st.accounts = firstBootAccounts([]User{{Name: "kept", Password: "k", Role: RoleReplication}})
	b, err := encodeCheckpoint(st, 7)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := decodeCheckpoint(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := back.accounts[accountKey("kept", "%")]
	if a == nil {
		t.Fatalf("accounts after the checkpoint: %v", back.accounts)
	}
	if _, clone := a.dynamic["CLONE_ADMIN"]; len(back.accounts) != 1 || !a.passwordMatches("k") || !a.global["REPLICATION SLAVE"] || !clone {
		t.Fatalf("accounts after the checkpoint: %+v", back.accounts)
	}
	legacy := strings.Replace(string(b), `"accounts":`, `"accountsOld":`, 1)
	back, _, err = decodeCheckpoint([]byte(legacy), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a := back.accounts[accountKey("op", "%")]; len(back.accounts) != 1 || a == nil || !a.passwordMatches("pw") || !a.global["SUPER"] {
		t.Fatalf("legacy checkpoint: accounts %+v, want the configured op", back.accounts)
	}
}
