// Package repocheck holds tests of the repository's shape rather than of its
// behaviour: the production binaries link no test-bed code, docs/layout.md
// lists every package, and package names are unique. It has no code of its
// own; everything is in its _test.go files.
package repocheck
