package egress

import (
	"fmt"
	"io"
	"net/http"
	"testing"
)

// BenchmarkTunnel is 32 MiB from a loopback HTTPS server through the
// proxy's CONNECT tunnel; BenchmarkDirect the same download without it.
// bench/proxy.sh compares them as a build sees them (curl in a
// container).
func BenchmarkTunnel(b *testing.B) { benchmarkDownload(b, true) }

func BenchmarkDirect(b *testing.B) { benchmarkDownload(b, false) }

func benchmarkDownload(b *testing.B, proxied bool) {
	const size = 32 << 20
	w := newWorld(b, "", nil)
	w.serve()
	c := w.client()
	if !proxied {
		c.Transport.(*http.Transport).Proxy = nil
		c.Transport.(*http.Transport).DialContext = nil
		c.Transport.(*http.Transport).TLSClientConfig.ServerName = "registry.example.org"
	}
	url := fmt.Sprintf("https://registry.example.org:%d/big?n=%d", w.port, size)
	if !proxied {
		url = fmt.Sprintf("https://127.0.0.1:%d/big?n=%d", w.port, size)
	}
	b.SetBytes(size)
	for b.Loop() {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size {
			b.Fatalf("%d bytes, %v", n, err)
		}
	}
}
