package topology

// ReasonNoEligibleCandidate (Degraded=True): the sites' GTID sets are
// comparable, but the site holding all of them cannot be made the first
// active site (it is a DisasterRecovery or reader site, or unreachable).
// The other Degraded reasons are v1alpha1's.
const ReasonNoEligibleCandidate = "NoEligibleCandidate"

// ReasonNoRecoveryPending is RecoveryPending=False: no old primary is being
// recovered or blocked.
const ReasonNoRecoveryPending = "NoRecoveryPending"

// Event reasons of the topology manager (<Subject><PastTenseVerb>[Cause]),
// each always recorded with the type noted.
const (
	// EventBootstrapStarted (Normal): the first active site was chosen and
	// the intent recorded in status.transition.
	EventBootstrapStarted = "BootstrapStarted"
	// EventBootstrapSucceeded (Normal): the first active site is writable and
	// published; topologyGeneration was incremented.
	EventBootstrapSucceeded = "BootstrapSucceeded"
	// EventBootstrapAborted (Warning): a recorded bootstrap was abandoned
	// because its target stopped qualifying; a new choice follows.
	EventBootstrapAborted = "BootstrapAborted"
	// EventBootstrapRefusedIncomparableGTIDSets (Warning): no site was made
	// writable because two sites hold transactions the other lacks.
	EventBootstrapRefusedIncomparableGTIDSets = "BootstrapRefusedIncomparableGTIDSets"
	// EventBootstrapRefusedNoEligibleCandidate (Warning): no reachable
	// PrimaryCandidate holds every transaction.
	EventBootstrapRefusedNoEligibleCandidate = "BootstrapRefusedNoEligibleCandidate"
	// EventActiveSiteReasserted (Normal): the known active site was found
	// read-only (for example after a mysqld restart) and made writable again.
	EventActiveSiteReasserted = "ActiveSiteReasserted"
	// EventActiveSiteReassertRefused (Warning): the known active site is
	// read-only and another site holds transactions it lacks, so it stays
	// read-only.
	EventActiveSiteReassertRefused = "ActiveSiteReassertRefused"
	// EventSiteFenced (Warning): a site that must not be writable was found
	// writable and fenced (super_read_only=ON).
	EventSiteFenced = "SiteFenced"
	// EventFollowerRepointed (Normal): a follower now replicates from the
	// active site's internal Service.
	EventFollowerRepointed = "FollowerRepointed"
	// EventFollowerRepointFailed (Warning): repointing or starting a
	// follower's replication failed.
	EventFollowerRepointFailed = "FollowerRepointFailed"
	// EventCloneStarted (Normal), EventCloneSucceeded (Normal),
	// EventCloneFailed (Warning): a follower that could not catch up from
	// binary logs is being, was, or could not be recloned from the active site.
	EventCloneStarted   = "CloneStarted"
	EventCloneSucceeded = "CloneSucceeded"
	EventCloneFailed    = "CloneFailed"
	// EventCloneRefusedDivergentTransactions (Warning): a follower needs a
	// clone but holds transactions the donor lacks; it is left as it is.
	EventCloneRefusedDivergentTransactions = "CloneRefusedDivergentTransactions"
	// EventDivergentTransactionsDetected (Warning): a follower (a replica,
	// or the old primary after a failover) holds transactions the active
	// site lacks.
	EventDivergentTransactionsDetected = "DivergentTransactionsDetected"
	// EventOldPrimaryRecovered (Normal): an old primary's divergence record
	// cleared (v1.7.0 name of RecoveryComplete).
	EventOldPrimaryRecovered = "OldPrimaryRecovered"
)
