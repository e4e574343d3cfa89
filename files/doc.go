// Package files is the provider seam between capkit's file tools and storage:
// text and byte IO, atomic mutation with an optional version guard, and the
// policy events (write expectation, edit expectation, observed) that a
// policy plugin such as files/policy listens to. It also holds Resolve, the
// one lexical mapping from a caller's path to a root and a root-relative
// name, shared by every tool that takes a path.
package files
