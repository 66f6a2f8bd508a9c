package managerintegration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shipstream/bloodraven/pkg/accounts"
	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
	"github.com/shipstream/bloodraven/pkg/controllers/topologymanager"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
)

// TestAccountsReplicaUnreachableDuringRotationIsMovedWhenItReturns: the
// reader is cut off from the operator and from its source while the
// passwords rotate, so its channel keeps the old replication password
// past the discard. When the partition heals its receiver reconnects with
// it and is refused (1045); the operator must move that channel once the
// site is reachable again, after which the reader replicates: its receiver
// runs, its executed set catches up with the active site's writes, and no
// further authentication fails (a receiver restarted afterwards connects).
func TestAccountsReplicaUnreachableDuringRotationIsMovedWhenItReturns(t *testing.T) {
	w, _ := newRotationWorld(t, testOverlap)
	iad, reader := w.sites["iad"], w.sites["reader"]
	reader.Partition(topologymanager.DefaultProgram) // the operator's connections
	mysqlsim.PartitionPeers(iad, reader)             // replication from the active site
	// The receiver's connection is lost in the partition (restarted here
	// rather than after replica_net_timeout's 60 s) and it keeps
	// reconnecting, each attempt timing out after 3 s.
	w.exec0("reader", "SET GLOBAL replica_net_timeout = 3", "STOP REPLICA IO_THREAD", "START REPLICA IO_THREAD")
	healed := false
	t.Cleanup(func() {
		if !healed {
			reader.Heal()
			iad.Heal()
		}
	})
	eventually(t, waitFor, "the reader seen unreachable", func() error {
		for _, s := range w.get().Status.Sites {
			if s.Name == "reader" && s.State == v1alpha1.SiteUnreachable {
				return nil
			}
		}
		return fmt.Errorf("reader not Unreachable in the status yet")
	})
	old := w.rotateAll("2")
	w.appFollowsOverlap()
	w.waitCondition(v1alpha1.ConditionCredentialsReady, metav1.ConditionTrue, v1alpha1.ReasonCredentialsCurrent)
	if err := w.loginWorks("iad", acctReplUser, old[accounts.RoleReplication]); !isAccessDenied(err) {
		t.Fatalf("the old replication password on iad after the discard: %v, want access denied", err)
	}

	beforeHeal := w.failedAuths(acctReplUser)[acctReplUser]
	beforeOp := w.failedAuths(acctOpUser)[acctOpUser]
	reader.Heal()
	iad.Heal()
	healed = true
	waitReplicating(w.env, "reader")
	w.waitEvent(v1alpha1.EventReplicationChannelMoved, "Normal")
	t.Logf("the reader's receiver was refused %d times between the heal and its move", w.failedAuths(acctReplUser)[acctReplUser]-beforeHeal)
	target := iad.Snapshot().Executed
	eventually(t, waitFor, "the reader catches up with the active site", func() error {
		if got := reader.Snapshot().Executed; !target.IsSubsetOf(got) {
			return fmt.Errorf("reader executed %s, active site had %s", got.OneLine(), target.OneLine())
		}
		return nil
	})
	// The reader refused the operator account's new password until it had
	// the ALTERs (the sidecar stand-ins', and the operator's new
	// connections between the reader's catching up and the operator
	// noticing it: docs/credentials.md, "A site unreachable during a
	// rotation"). Once the operator connects to it with the current
	// password again, the rotation's checks: nothing fails to
	// authenticate, receivers restarted now connect, only the new
	// passwords work.
	eventually(t, waitFor, "the operator back on the current password for the reader", func() error {
		sec, err := w.kube.CoreV1().Secrets(w.ns).Get(t.Context(), topologymanager.AppliedSecretName(groupName), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if raw := string(sec.Data[string(accounts.RoleOperator)]); strings.Contains(raw, `"unmoved"`) {
			return fmt.Errorf("the operator account's store entry still lists a site behind")
		}
		return nil
	})
	time.Sleep(time.Second) // the pass that read the store before the change ends
	w.before = w.failedAuths(acctOpUser, acctReplUser, credUsers[accounts.RoleApp])
	t.Logf("failed logins after the heal until then: %d of the operator account", w.before[acctOpUser]-beforeOp)
	w.checkRotated(old)
}
