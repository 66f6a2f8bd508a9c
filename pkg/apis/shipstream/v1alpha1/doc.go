// Package v1alpha1 is the v1alpha1 version of the shipstream.io API: the
// custom resources that declare Bloodraven's multi-site MySQL failover groups,
// their backups, backup verifications, standby clusters and databases.
//
// The shape is the v1.7.0 one (see docs/api.md). Validation that the API server
// can do on its own lives in kubebuilder markers on the types, so that the CRD
// YAML generated from this package refuses bad objects at admission.
//
// +k8s:deepcopy-gen=package
// +groupName=shipstream.io
package v1alpha1
