package topologymanager

import (
	"testing"

	"github.com/shipstream/bloodraven/pkg/accounts"
)

// TestCredentialsBehindSites: a site the operator account's rotation left
// behind is connected to with the password it still has; every other site
// with the current one; once the store lists no site, nothing is behind.
func TestCredentialsBehindSites(t *testing.T) {
	accts := []accounts.Account{{Role: accounts.RoleOperator, User: "op", Password: "new"}}
	store := appliedPasswords{accounts.RoleOperator: {User: "op", Current: "new", Unmoved: []string{"reader"}, Behind: "old"}}
	c, _ := store.credentials(accts)
	if c.Password != "new" || c.Behind["reader"] != "old" || len(c.Behind) != 1 {
		t.Fatalf("credentials %q behind %v, want new and reader=old only", c.Password, c.Behind)
	}
	store[accounts.RoleOperator] = appliedEntry{User: "op", Current: "new"}
	if c, _ := store.credentials(accts); c.Behind != nil {
		t.Fatalf("behind %v with no site listed", c.Behind)
	}
}
