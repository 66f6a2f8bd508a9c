package topology

// Condition types this controller writes on a MysqlFailoverGroup, besides
// Updating (v1alpha1.ConditionUpdating).
const (
	// ConditionResourcesReady: every site's objects could be rendered and
	// applied. False/RenderFailed names the field at fault.
	ConditionResourcesReady = "ResourcesReady"
	// ConditionDNSReady: the DNSEndpoint points at the active site.
	ConditionDNSReady = "DNSReady"
)

// Condition reasons.
const (
	ReasonReconciled   = "Reconciled"
	ReasonRenderFailed = "RenderFailed"
	// ReasonApplyRefused: the API server refused one of the group's objects
	// as invalid (ResourcesReady False); the message names the object, the
	// spec fields it comes from and the API server's reason.
	ReasonApplyRefused = "ApplyRefused"

	ReasonDNSEndpointCurrent    = "DNSEndpointCurrent"
	ReasonDNSEndpointCRDMissing = "DNSEndpointCRDMissing"
	ReasonNoDNSTarget           = "NoDNSTarget"

	// Updating reasons, besides v1alpha1.ReasonOrderedUpdateStalled.
	ReasonUpToDate = "UpToDate"
	ReasonRolling  = "Rolling"
)

// Event reasons (<Subject><PastTenseVerb>[Qualifier]); the type is fixed
// per reason.
const (
	// EventSiteRenderFailed (Warning): a site's objects could not be rendered.
	EventSiteRenderFailed = "SiteRenderFailed"
	// EventObjectRefused (Warning): the API server refused one of the
	// group's objects as invalid; recorded when the refusal first shows.
	EventObjectRefused = "ObjectRefused"
	// EventMySQLConfOptionIgnored (Warning): mysqlConf named an option the
	// operator owns; recorded when the template carrying it is written.
	EventMySQLConfOptionIgnored = "MySQLConfOptionIgnored"
	// EventSiteRolled (Normal): a site's pod was deleted to be recreated from
	// the new pod template.
	EventSiteRolled = "SiteRolled"
	// EventOrderedUpdateStalled (Warning): the ordered update stopped at a
	// site that is not Ready, or cannot hand the primary role over;
	// recorded when the stall begins.
	EventOrderedUpdateStalled = "OrderedUpdateStalled"
	// EventOrderedUpdateHandoffStarted (Normal): the ordered update stored
	// the planned-failover claim that hands the primary role to an updated
	// follower (also for a retry).
	EventOrderedUpdateHandoffStarted = "OrderedUpdateHandoffStarted"
	// EventOrderedUpdateHandoffFailed (Warning): that planned failover ended
	// without moving the active site; the message says when it is retried.
	EventOrderedUpdateHandoffFailed = "OrderedUpdateHandoffFailed"
	// EventDNSEndpointSkippedCRDMissing (Warning): external-dns's DNSEndpoint
	// CRD is not installed, so the DNS record is not managed.
	EventDNSEndpointSkippedCRDMissing = "DNSEndpointSkippedCRDMissing"
	// EventDNSEndpointUpdated (Normal): the DNS record now points at a new
	// target (or was created).
	EventDNSEndpointUpdated = "DNSEndpointUpdated"
	// EventNodeTainted and EventNodeUntainted (Normal): the group's
	// db-readonly taint was added to or removed from a node.
	EventNodeTainted   = "NodeTainted"
	EventNodeUntainted = "NodeUntainted"
	// EventDNSEndpointDeleted (Normal): the group's DNSEndpoint was deleted
	// while the group was being deleted.
	EventDNSEndpointDeleted = "DNSEndpointDeleted"
)
