package accounts

import (
	"errors"
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

func TestOwnerGrantsHoldNothingExcluded(t *testing.T) {
	gs := OwnerGrants([]string{"orders", "billing", "orders"})
	if len(gs) != 2 || gs[0].On != "`billing`.*" || gs[1].On != "`orders`.*" {
		t.Fatalf("grants %+v", gs)
	}
	for _, g := range gs {
		if g.WithGrantOption || g.On == GlobalLevel {
			t.Fatalf("owner grant %+v reaches beyond its schema", g)
		}
		for _, p := range g.Privileges {
			for _, x := range ExcludedFromApp {
				if p == x {
					t.Fatalf("owner holds excluded privilege %s", p)
				}
			}
		}
	}
	stmts := OwnerCreateStatements("o", "p'w", []string{"orders"})
	if stmts[0] != `CREATE USER 'o'@'%' IDENTIFIED BY 'p\'w'` || !strings.HasPrefix(stmts[1], "GRANT SELECT, INSERT") || !strings.HasSuffix(stmts[1], " ON `orders`.* TO 'o'@'%'") {
		t.Fatalf("statements %q", stmts)
	}
}

func TestOwnerDrift(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"as wanted (ALL PRIVILEGES abbreviated)", []string{"GRANT USAGE ON *.* TO `o`@`%`", "GRANT ALL PRIVILEGES ON `orders`.* TO `o`@`%`"}, ""},
		{"missing schema grant", []string{"GRANT USAGE ON *.* TO `o`@`%`"}, "GRANT ALTER, ALTER ROUTINE, CREATE"},
		{"global privilege revoked", []string{"GRANT SUPER ON *.* TO `o`@`%`", "GRANT ALL PRIVILEGES ON `orders`.* TO `o`@`%`"}, "REVOKE SUPER ON *.* FROM 'o'@'%'"},
		{"another schema revoked", []string{"GRANT ALL PRIVILEGES ON `orders`.* TO `o`@`%`", "GRANT SELECT ON `crm`.* TO `o`@`%`"}, "REVOKE SELECT ON `crm`.* FROM 'o'@'%'"},
		{"grant option revoked", []string{"GRANT ALL PRIVILEGES ON `orders`.* TO `o`@`%` WITH GRANT OPTION"}, "REVOKE GRANT OPTION ON `orders`.* FROM 'o'@'%'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OwnerDrift("o", []string{"orders"}, tc.lines)
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(got, "; ")
			if (tc.want == "") != (joined == "") || !strings.Contains(joined, tc.want) {
				t.Fatalf("drift %q, want one containing %q", joined, tc.want)
			}
		})
	}
	if _, err := OwnerDrift("o", []string{"orders"}, []string{"GRANT SELECT (c) ON `orders`.`t` TO `o`@`%`"}); err == nil {
		t.Fatal("a column grant was read")
	}
}

func TestManagedUsersAndCollision(t *testing.T) {
	c := v1alpha1.CredentialsSpec{OperatorSecretName: "op", AppSecretName: "app", MonitorSecretName: "missing"}
	get := func(name string) (map[string][]byte, error) {
		switch name {
		case "op":
			return map[string][]byte{"username": []byte("bloodraven"), "password": []byte("x"), SecretKeyReplicationUser: []byte("repl")}, nil
		case "app":
			return map[string][]byte{"username": []byte("shop"), "password": []byte("y")}, nil
		}
		return nil, errors.New("not found")
	}
	got := strings.Join(ManagedUsers(c, get), ",")
	if got != "bloodraven,repl,root,shop" {
		t.Fatalf("managed %s", got)
	}
	if OwnerCollision("shop", ManagedUsers(c, get)) == nil || OwnerCollision("Shop", ManagedUsers(c, get)) != nil {
		t.Fatal("collision must be exact (MySQL user names are case-sensitive)")
	}
}
