package host

import (
	"context"
	"log/slog"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/audit/trail"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// auditSinks are the sinks the host's audit trail writes to.
type auditSinks struct {
	handler *audit.Handler
	file    *trail.Writer // nil without audit_log
}

// openAudit builds the audit logger on the configured sinks (audit_log:
// the hash-chained file), or returns nil when none is configured. What a
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
	if cfg.AuditStore != "" || cfg.Telemetry.OTLPEndpoint != "" {
		return nil, fault.New(fault.InvalidInput, "audit_store and [telemetry] are not in this build yet")
	}
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

// auditFailed tells the detail log of an event a sink could not keep.
func (h *Host) auditFailed(sink string) func(error) {
	return func(err error) {
		h.Log.Error("audit: an event was not kept", slog.String("sink", sink), slog.String("error", err.Error()))
	}
}
