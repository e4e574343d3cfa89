package kernel

import (
	"context"
	"log/slog"
)

// The audit trail: every event the kernel logs to Options.Audit names the
// call's actor, its session (Session.ID) and, when the front door gave one,
// its request (WithRequest), so one session's calls can be followed
// through the log, and a request's events told apart from another's.

// requestKey carries the request id WithRequest gives.
type requestKey struct{}

// WithRequest returns ctx carrying the id of the request the calls made
// under it serve (the JSON-RPC id of a tools/call, a CLI invocation),
// which their audit events name. Calls made by a call (run_script's)
// serve its request. The id goes to the audit log as given: a front door
// passes an id of its own or a plain, bounded rendering of the client's,
// never content.
func WithRequest(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestKey{}, id)
}

// requestOf is the request id ctx carries, or "".
func requestOf(ctx context.Context) string {
	id, _ := ctx.Value(requestKey{}).(string)
	return id
}

// callKey finds the call a handler's context (or one derived from it)
// belongs to: callCtx answers it.
type callKey struct{}

// appendIdentity appends the attributes naming who an audit event is
// about.
func appendIdentity(attrs []slog.Attr, s *Session, ctx context.Context) []slog.Attr {
	attrs = append(attrs, slog.String("actor", s.actor), slog.String("session", s.id))
	if req := requestOf(ctx); req != "" {
		attrs = append(attrs, slog.String("request", req))
	}
	return attrs
}

// AuditHandler returns a handler that adds, to every record logged with
// the context of a call (the context its handler runs under, or one
// derived from it) and naming no session itself, the call's actor,
// session and request, then passes it to next. A host builds the audit
// logger it gives Options.Audit and its tools on it, so that what a tool
// audits (how a contained command was contained) is tied to the call the
// kernel audited. Records logged without a call's context pass unchanged.
func AuditHandler(next slog.Handler) slog.Handler { return auditHandler{next} }

type auditHandler struct{ next slog.Handler }

func (h auditHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h auditHandler) Handle(ctx context.Context, r slog.Record) error {
	if c, ok := ctx.Value(callKey{}).(*Call); ok && c != nil && !namesSession(r) {
		r = r.Clone()
		r.AddAttrs(appendIdentity(nil, c.Session, ctx)...)
	}
	return h.next.Handle(ctx, r)
}

func (h auditHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return auditHandler{h.next.WithAttrs(attrs)}
}

func (h auditHandler) WithGroup(name string) slog.Handler {
	return auditHandler{h.next.WithGroup(name)}
}

// namesSession reports whether r has a session attribute of its own (the
// kernel's call event, logged from a call its handler made).
func namesSession(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == "session"
		return !found
	})
	return found
}
