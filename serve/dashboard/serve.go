package dashboard

import (
	"context"
	"log/slog"
	"net"
	"net/http"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/httpguard"
	"github.com/capkit/capkit/limits"
)

// CheckAddress fails on an address (host:port) Serve would refuse: one
// that is not loopback when no token is given.
func CheckAddress(addr string, token bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fault.Wrap(fault.InvalidInput, err, "dashboard address %q: want HOST:PORT, e.g. 127.0.0.1:8940", addr)
	}
	if !token && !httpguard.IsLoopbackHost(host) {
		return nonLoopback(addr)
	}
	return nil
}

func nonLoopback(addr string) error {
	return fault.Wrap(fault.Denied, ErrNonLoopback,
		"refusing to serve the dashboard on %s: not a loopback address (serving beyond this machine needs a token file, and TLS in front)", addr)
}

// Serve serves the dashboard on ln until ctx ends, then stops: open live
// streams end with ctx, requests in flight get limits.HTTPShutdownGrace.
// It closes ln. Without a token, ln must be bound to a loopback address.
// onServing, when not nil, is called once the listener serves.
func (d *Dashboard) Serve(ctx context.Context, ln net.Listener, onServing func(net.Addr)) error {
	tcp, ok := ln.Addr().(*net.TCPAddr)
	if d.opts.Token == "" && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return nonLoopback(ln.Addr().String())
	}
	if ok {
		d.port.Store(uint32(tcp.Port))
	}
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	srv := &http.Server{
		Handler:           d,
		ReadHeaderTimeout: limits.HTTPReadHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if onServing != nil {
		onServing(ln.Addr())
	}
	select {
	case err := <-errc:
		return fault.Wrap(fault.Unavailable, err, "serving the dashboard failed")
	case <-ctx.Done():
	}
	cancel() // ends the live streams, which Shutdown would wait for
	sctx, stop := context.WithTimeout(context.Background(), limits.HTTPShutdownGrace)
	defer stop()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-errc
	return nil
}
