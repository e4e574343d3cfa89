// Package files is the provider seam between capkit's file tools and storage:
// text and byte IO, atomic mutation with an optional version guard, and the
// policy events (write expectation, edit expectation, observed) that a
// policy plugin such as files/policy listens to. Its operations take
// targets resolved in a scope (internal/scope), which confines them and
// checks every change.
package files
