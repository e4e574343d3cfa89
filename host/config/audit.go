package config

import (
	"net/url"
	"strings"

	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
)

// The audit trail's sinks, beside audit_log (the hash-chained file):
//
//	audit_max_bytes = 268435456                 # optional: rotate audit_log past this size
//	audit_store = "postgres://host/db"          # optional: also a PostgreSQL store many hosts share
//	audit_spool = "/var/lib/capkit/audit-spool" # with audit_store: where events wait while the store is down
//	audit_spool_max_bytes = 67108864            # the spool's bound
//
//	[telemetry]
//	otlp_endpoint = "http://127.0.0.1:4318"     # OpenTelemetry over OTLP/HTTP: a span per call, and metrics
//	service_name = "capkit"                     # optional: the service.name resource attribute
//	exporter = "/usr/local/bin/capkit-otel"     # optional: the exporter program (default: beside capkit, else on PATH)
//
// The spool and the file are refused inside a writable root, as the logs
// are: a model could rewrite its own trail.

// TelemetryConfig is the [telemetry] table.
type TelemetryConfig struct {
	// OTLPEndpoint is the OTLP/HTTP base URL (http:// or https://);
	// traces go to /v1/traces and metrics to /v1/metrics under it.
	OTLPEndpoint string `toml:"otlp_endpoint"`
	// ServiceName is the service.name of what capkit exports; empty means
	// "capkit".
	ServiceName string `toml:"service_name"`
	// Exporter is the capkit-otel program to run; empty: the one beside
	// capkit, else on PATH.
	Exporter string `toml:"exporter"`
}

// resolveAudit checks the audit sinks' keys and makes the spool's path
// absolute.
func (c *Config) resolveAudit(errs *errorList) {
	switch {
	case c.AuditMaxBytes != 0 && c.AuditLog == "":
		errs.add(c.Errorf("audit_max_bytes", "applies to audit_log, which is not set"))
	case c.AuditMaxBytes != 0 && (c.AuditMaxBytes < limits.AuditMinFileBytes || c.AuditMaxBytes > limits.AuditHardMaxFileBytes):
		errs.add(c.Errorf("audit_max_bytes", "%d is outside %s..%s", c.AuditMaxBytes, limits.Bytes(limits.AuditMinFileBytes), limits.Bytes(limits.AuditHardMaxFileBytes)))
	}
	if c.has("audit_store") && !budget.IsPostgres(c.AuditStore) {
		errs.add(c.Errorf("audit_store", "must be a postgres:// URL"))
	}
	for _, k := range []string{"audit_spool", "audit_spool_max_bytes"} {
		if c.has(k) && c.AuditStore == "" {
			errs.add(c.Errorf(k, "applies to audit_store, which is not set"))
		}
	}
	if n := c.AuditSpoolMaxBytes; n != 0 && (n < limits.AuditMinSpoolBytes || n > limits.AuditHardMaxSpoolBytes) {
		errs.add(c.Errorf("audit_spool_max_bytes", "%d is outside %s..%s", n, limits.Bytes(limits.AuditMinSpoolBytes), limits.Bytes(limits.AuditHardMaxSpoolBytes)))
	}
	if c.AuditSpool != "" {
		abs, err := c.abs(c.AuditSpool)
		if err != nil || strings.ContainsRune(c.AuditSpool, 0) {
			errs.add(c.Errorf("audit_spool", "bad path"))
		} else {
			c.AuditSpool = abs
			c.refuseWritable(errs, "audit_spool", abs)
		}
	}
	if e := c.Telemetry.OTLPEndpoint; e != "" || c.has("telemetry.otlp_endpoint") {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			errs.add(c.Errorf("telemetry.otlp_endpoint", "want an http:// or https:// base URL, such as http://127.0.0.1:4318"))
		}
	}
	for _, k := range []string{"service_name", "exporter"} {
		if c.has("telemetry."+k) && c.Telemetry.OTLPEndpoint == "" {
			errs.add(c.Errorf("telemetry."+k, "applies to otlp_endpoint, which is not set"))
		}
	}
	if p := c.Telemetry.Exporter; p != "" {
		abs, err := c.abs(p)
		if err != nil || strings.ContainsRune(p, 0) {
			errs.add(c.Errorf("telemetry.exporter", "bad path"))
		} else {
			c.Telemetry.Exporter = abs
			c.refuseWritable(errs, "telemetry.exporter", abs)
		}
	}
}
