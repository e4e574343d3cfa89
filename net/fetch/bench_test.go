package fetch

import (
	"net/netip"
	"testing"
)

// BenchmarkControl is the dial-time check of one public IPv6 address (the
// longest path through the tables).
func BenchmarkControl(b *testing.B) {
	g := &guard{exceptions: []netip.Prefix{netip.MustParsePrefix("10.2.0.0/24")}}
	for b.Loop() {
		if err := g.control("tcp6", "[2606:4700::1111]:443", nil); err != nil {
			b.Fatal(err)
		}
	}
}
