package mysqlsim

import "testing"

func TestRedactSecrets(t *testing.T) {
	cases := map[string]string{
		"CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h', SOURCE_PASSWORD = 's3cr''et', SOURCE_PORT = 1": "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h', SOURCE_PASSWORD = <secret>, SOURCE_PORT = 1",
		"CLONE INSTANCE FROM 'u'@'h':1 IDENTIFIED BY 'pw' REQUIRE SSL":                                  "CLONE INSTANCE FROM 'u'@'h':1 IDENTIFIED BY <secret> REQUIRE SSL",
		"SELECT 'password'": "SELECT 'password'",
		"CREATE USER 'u'@'%' IDENTIFIED WITH 'caching_sha2_password' BY 'pw'": "CREATE USER 'u'@'%' IDENTIFIED WITH 'caching_sha2_password' BY <secret>",
		"ALTER USER u IDENTIFIED BY 'new' RETAIN CURRENT PASSWORD":            "ALTER USER u IDENTIFIED BY <secret> RETAIN CURRENT PASSWORD",
	}
	for in, want := range cases {
		toks, err := lex(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := redactSecrets(in, toks); got != want {
			t.Errorf("redactSecrets(%q) = %q, want %q", in, got, want)
		}
	}
}
