// Package httpguard is what capkit's HTTP front doors (serve/mcpserver,
// serve/dashboard) check before anything else: that a Host or Origin
// names this machine (the DNS-rebinding protection), and that a bearer
// token matches, in constant time.
package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

// IsLoopbackHost reports whether name is "localhost" (any case) or a
// loopback IP: the one loopback check of the servers and the CLI.
func IsLoopbackHost(name string) bool {
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// LocalIP is the address of this machine the request's connection
// arrived at, or nil when the server does not say (a handler mounted
// behind something other than net/http's server).
func LocalIP(r *http.Request) net.IP {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		return a.IP
	}
	return nil
}

// IsLocalIP reports whether name is an IP literal naming local, the
// address the connection arrived at. A name a client resolved (what DNS
// rebinding abuses) is never an IP literal.
func IsLocalIP(name string, local net.IP) bool {
	ip := net.ParseIP(name)
	return ip != nil && local != nil && ip.Equal(local)
}

// SplitHost splits "name", "name:port", "[v6]" or "[v6]:port".
func SplitHost(host string) (name, port string, ok bool) {
	if host == "" {
		return "", "", false
	}
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return "", "", false
		}
		name, rest := host[1:end], host[end+1:]
		if rest == "" {
			return name, "", true
		}
		if rest[0] != ':' || rest == ":" {
			return "", "", false
		}
		return name, rest[1:], name != ""
	}
	switch strings.Count(host, ":") {
	case 0:
		return host, "", true
	case 1:
		name, port, _ := strings.Cut(host, ":")
		if name == "" || port == "" {
			return "", "", false
		}
		return name, port, true
	}
	return "", "", false // a bare IPv6 address is not a valid Host
}

// Digest is what a server keeps of a token: its SHA-256, so that a
// comparison takes the same time whatever the lengths.
type Digest [sha256.Size]byte

// DigestOf is token's digest.
func DigestOf(token string) Digest { return sha256.Sum256([]byte(token)) }

// Equal reports whether token's digest is d, in constant time.
func (d Digest) Equal(token string) bool {
	sum := DigestOf(token)
	return subtle.ConstantTimeCompare(sum[:], d[:]) == 1
}

// Bearer is the token of an "Authorization: Bearer T" header ("" when
// none).
func Bearer(r *http.Request) string {
	const prefix = "Bearer "
	a := r.Header.Get("Authorization")
	if len(a) <= len(prefix) || !strings.EqualFold(a[:len(prefix)], prefix) {
		return ""
	}
	return a[len(prefix):]
}

// VisibleToken reports whether tok is a usable token: visible ASCII
// without spaces, not empty.
func VisibleToken(tok string) bool {
	for i := 0; i < len(tok); i++ {
		if tok[i] <= ' ' || tok[i] > '~' {
			return false
		}
	}
	return tok != ""
}
