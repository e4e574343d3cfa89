package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// telemetryModules are what capkit-otel holds and capkit must not link:
// the OpenTelemetry API, SDK and exporters, protobuf and gRPC (their
// package initializers would run at every capkit start: audit/exporter).
var telemetryModules = []string{"go.opentelemetry.io/", "google.golang.org/protobuf/", "google.golang.org/grpc"}

// TestCapkitLeavesTelemetryOut: no package of telemetryModules is among
// cmd/capkit's dependencies, and each is among cmd/capkit-otel's (so a
// rename that made the first check vacuous fails the second).
func TestCapkitLeavesTelemetryOut(t *testing.T) {
	for _, p := range deps(t, module+"/cmd/capkit") {
		if heavy(p) != "" {
			t.Errorf("cmd/capkit links %s: telemetry belongs in cmd/capkit-otel", p)
		}
	}
	seen := map[string]bool{}
	for _, p := range deps(t, module+"/cmd/capkit-otel") {
		seen[heavy(p)] = true
	}
	for _, m := range telemetryModules {
		if !seen[m] {
			t.Errorf("cmd/capkit-otel links nothing under %s: the check of cmd/capkit proves nothing", m)
		}
	}
}

// heavy is the entry of telemetryModules that path is under, or "".
func heavy(path string) string {
	i := slices.IndexFunc(telemetryModules, func(m string) bool { return strings.HasPrefix(path, m) })
	if i < 0 {
		return ""
	}
	return telemetryModules[i]
}

// deps are the packages a command links, as go list -deps names them.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}
