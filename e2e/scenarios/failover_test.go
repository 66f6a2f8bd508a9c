//go:build e2e

package scenarios

import "testing"

// The failure scenarios of the playground issue need automatic failover in
// the operator binary. The topology manager has the failover step machine
// (ManagerOptions.AutomaticFailover) but the operator has no setting that
// turns it on yet, so these are skipped, naming what is missing.
const noAutomaticFailover = "needs automatic failover in the operator process: topology.ManagerOptions.AutomaticFailover has no operator flag yet"

func TestPrimaryCrashFailsOver(t *testing.T)                      { t.Skip(noAutomaticFailover) }
func TestPrimaryPartitionedFencesItselfAndFailsOver(t *testing.T) { t.Skip(noAutomaticFailover) }
func TestOperatorKilledMidFailoverCompletesOnce(t *testing.T)     { t.Skip(noAutomaticFailover) }
func TestErrantTransactionBlocksThenRecloneHeals(t *testing.T)    { t.Skip(noAutomaticFailover) }
func TestFailoverRevokesLeasesWithTopologyChanged(t *testing.T)   { t.Skip(noAutomaticFailover) }
