package deployclient_test

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shipstream/bloodraven/pkg/controllers/leaserevocation"
	"github.com/shipstream/bloodraven/pkg/deployclient"
	"github.com/shipstream/bloodraven/pkg/leasestore"
	"github.com/shipstream/bloodraven/pkg/testbed/kubeenv"
)

// TestOperatorRevocationStopsTheCommand: an administrator's revoke
// annotation, carried out by the real deploy-lease controller, answers the
// next renewal 409 revoked OperatorRevoked; the command is stopped within a
// renewal period and the exit code says OperatorRevoked.
func TestOperatorRevocationStopsTheCommand(t *testing.T) {
	e := newEnv(t)
	op := kubeenv.InNamespace(t, cp, e.ns).NewInstance()
	c, err := leaserevocation.New(op.Deps, leaserevocation.Options{Store: leasestore.New(e.kube, leasestore.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	op.Start(1, c)
	tok, _ := e.mintBound()
	e.writeToken(tok)
	s := e.start(runOpts{sleep: time.Minute})
	e.waitLog("lease renewed", 2, 10*time.Second)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{leaserevocation.RevokeAnnotation: "incident-42"}}})
	if _, err := e.ship.ShipstreamV1alpha1().MysqlFailoverGroups(e.ns).Patch(e.ctx, "orders", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	annotated := time.Now()
	res := e.wait(s, annotated.Add(testPolicy.TTL), "operator revocation")
	checkInsideDeadline(t, e, s, res)
	if res.Cause != deployclient.CauseOperatorRevoked || res.ExitCode() != 5 {
		t.Fatalf("cause %s (exit %d)", res.Cause, res.ExitCode())
	}
	t.Logf("stopped %s after the annotation", res.Command.FinishedAt.Sub(annotated))
	if !res.HoldReleased || !res.OutcomeRecorded {
		t.Fatalf("result %+v", res)
	}
}
