package host

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/audit/exporter"
	"github.com/capkit/capkit/audit/pgstore"
	"github.com/capkit/capkit/audit/trail"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// auditSinks are the sinks the host's audit trail writes to.
type auditSinks struct {
	handler *audit.Handler
	file    *trail.Writer  // nil without audit_log
	store   *pgstore.Store // nil without audit_store
}

// openAudit builds the audit logger on the configured sinks (audit_log:
// the hash-chained file; audit_store: the PostgreSQL store; [telemetry]:
// OpenTelemetry through the capkit-otel exporter), or returns nil when
// none is configured. What a
// tool audits (a contained command) names its call's actor, session and
// request, as the kernel's own events do: the logger is built on
// kernel.AuditHandler.
func (h *Host) openAudit() (*slog.Logger, error) {
	cfg := h.Config
	var sinks []audit.Sink
	as := &auditSinks{}
	if cfg.AuditLog != "" {
		w, err := trail.Open(cfg.AuditLog, &trail.Options{MaxBytes: cfg.AuditMaxBytes, OnError: h.auditFailed("file")})
		if err != nil {
			return nil, err
		}
		as.file = w
		sinks = append(sinks, w)
	}
	if cfg.AuditStore != "" {
		spool, err := spoolDir(cfg)
		if err != nil {
			return nil, err
		}
		st, err := pgstore.Open(cfg.AuditStore, &pgstore.Options{Spool: spool, SpoolMaxBytes: cfg.AuditSpoolMaxBytes,
			Log: h.Log, Lost: h.auditLost("postgres")})
		if err != nil {
			return nil, err
		}
		as.store = st
		sinks = append(sinks, st)
	}
	if cfg.Telemetry.OTLPEndpoint != "" {
		ts, err := exporter.Start(exporter.Options{Program: cfg.Telemetry.Exporter, Endpoint: cfg.Telemetry.OTLPEndpoint,
			ServiceName: cfg.Telemetry.ServiceName, ServiceVersion: h.opts.Version, Budgets: h.budgetUse, Log: h.Log})
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, ts)
	}
	sinks = append(sinks, h.opts.Sinks...)
	if len(sinks) == 0 {
		return nil, nil
	}
	as.handler = audit.NewHandler(sinks...)
	h.trail = as
	h.OnClose(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), limits.AuditCloseGrace)
		defer cancel()
		return as.handler.Close(ctx)
	})
	h.audit = slog.New(kernel.AuditHandler(as.handler))
	return h.audit, nil
}

// auditLost makes an audit event of events a sink could not keep, which
// every sink records (the sink itself too, once it can).
func (h *Host) auditLost(sink string) func(int64) {
	return func(n int64) {
		h.audit.LogAttrs(context.Background(), slog.LevelWarn, audit.MsgLost, slog.String("sink", sink), slog.Int64("lost", n))
	}
}

// spoolDir is where the store's events wait while it is unreachable:
// audit_spool, else audit-spool beside audit_log, else in the user's
// state directory.
func spoolDir(cfg *config.Config) (string, error) {
	switch {
	case cfg.AuditSpool != "":
		return cfg.AuditSpool, nil
	case cfg.AuditLog != "":
		return filepath.Join(filepath.Dir(cfg.AuditLog), "audit-spool"), nil
	}
	if state := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(state) {
		return filepath.Join(state, "capkit", "audit-spool"), nil
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "capkit", "audit-spool"), nil
	}
	return "", fault.New(fault.InvalidInput, "audit_store needs a spool directory: set audit_spool (neither audit_log, $XDG_STATE_HOME nor $HOME gives one)")
}

// auditFailed tells the detail log of an event a sink could not keep.
func (h *Host) auditFailed(sink string) func(error) {
	return func(err error) {
		h.Log.Error("audit: an event was not kept", slog.String("sink", sink), slog.String("error", err.Error()))
	}
}
