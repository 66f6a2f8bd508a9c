// Package shipstream holds the API group name shared by every version of the
// Bloodraven custom resources.
package shipstream

// GroupName is the API group of every Bloodraven custom resource.
const GroupName = "shipstream.io"
