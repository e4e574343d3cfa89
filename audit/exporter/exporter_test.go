package exporter

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/internal/testkit/otlptest"
	"github.com/capkit/capkit/limits"
)

// program builds capkit-otel for the test.
func program(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), Program)
	if out, err := exec.Command("go", "build", "-o", p, "github.com/capkit/capkit/cmd/capkit-otel").CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", Program, err, out)
	}
	return p
}

func call(i int) *audit.Event {
	r := slog.NewRecord(time.Now(), slog.LevelInfo, audit.MsgCall, 0)
	r.AddAttrs(slog.String("actor", "alice"), slog.String("tool", "read_file"), slog.String("outcome", "ok"), slog.Int("i", i))
	return audit.Encode(r)
}

// TestExporterProcess: events written to the sink reach the collector
// through the capkit-otel process, with the budgets the host reports; an
// exporter killed mid-run is started again and later events still
// arrive; Close waits for the last export.
func TestExporterProcess(t *testing.T) {
	col := otlptest.Start(t)
	s, err := Start(Options{Program: program(t), Endpoint: col.URL(), ServiceName: "capkit-test",
		Budgets: func(context.Context) []Budget { return []Budget{{Group: "g", Unit: "bytes", Used: 5, Limit: 50}} }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		s.Write(call(i))
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(col.Spans()) < 50 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(col.Spans()); n != 50 {
		t.Fatalf("%d spans before the kill", n)
	}
	s.killForTest()
	time.Sleep(100 * time.Millisecond)
	// Writes to the dead exporter are dropped (counted) until it is
	// started again.
	for i := range 10 {
		s.Write(call(100 + i))
		time.Sleep(20 * time.Millisecond)
	}
	deadline = time.Now().Add(20 * time.Second)
	for s.Stats().Starts < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for i := range 20 {
		s.Write(call(200 + i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Starts != 2 {
		t.Fatalf("stats %+v: the exporter was not started again", st)
	}
	if got := int64(len(col.Spans())); got+st.Dropped < 80 || got < 70 {
		t.Errorf("%d spans and %d dropped of 80 events", got, st.Dropped)
	}
	if got, _ := col.Sum("capkit.telemetry.dropped", "capkit.dropped", "event"); got != st.Dropped {
		t.Errorf("capkit.telemetry.dropped{event} %d, want the sink's %d", got, st.Dropped)
	}
	found := false
	for _, m := range col.Metrics() {
		if m.Name == "capkit.budget.used" && m.GetGauge() != nil {
			found = true
		}
	}
	if !found {
		t.Error("no budget gauge exported")
	}
}

// killForTest kills the running exporter.
func (s *Sink) killForTest() {
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	s.cmd.Process.Signal(syscall.SIGKILL)
}

// TestExporterNotReading: an exporter that reads nothing (hung) never
// makes Write wait: the queue and the pipe fill, and every event past
// them is dropped, counted.
func TestExporterNotReading(t *testing.T) {
	s := startShell(t, "exec sleep 600")
	n := 2 * limits.TelemetryQueueEvents
	for i := range n {
		s.Write(call(i))
	}
	st := s.Stats()
	// What is held: the queue, the writer's buffer and the pipe's.
	if st.Dropped < int64(n-limits.TelemetryQueueEvents-2_000) || st.Dropped > int64(n) {
		t.Errorf("%d of %d events dropped while the exporter read nothing", st.Dropped, n)
	}
	killAndClose(t, s)
}

// TestExporterQueueBytes: events of the largest size an event may have
// are queued up to limits.TelemetryQueueBytes while the exporter reads
// nothing, not limits.TelemetryQueueEvents of them; the rest are
// dropped, counted.
func TestExporterQueueBytes(t *testing.T) {
	s := startShell(t, "exec sleep 600")
	r := slog.NewRecord(time.Now(), slog.LevelInfo, audit.MsgCall, 0)
	r.AddAttrs(slog.String("tool", "read_file"), slog.String("note", strings.Repeat("x", limits.AuditMaxEventBytes-200)))
	big := audit.Encode(r)
	if len(big.JSON) < limits.AuditMaxEventBytes/2 {
		t.Fatalf("the event is %d bytes, not near the bound", len(big.JSON))
	}
	const n = 1_000
	for range n {
		s.Write(big)
	}
	// What is held: the queue, the writer's buffer and the pipe's (64 KiB
	// each at most).
	held := n - s.Stats().Dropped
	if most := int64((limits.TelemetryQueueBytes + 4*64*limits.KiB) / len(big.JSON)); held > most || held < 1 {
		t.Errorf("%d events of %d bytes held while the exporter read nothing, want 1 to %d", held, len(big.JSON), most)
	}
	killAndClose(t, s)
}

// TestExporterLogLineTooLong: an exporter that logs a line longer than
// any the log reader takes is not left waiting on its full stderr pipe
// (it reaches the command after its log; before, it waited forever).
func TestExporterLogLineTooLong(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "noisy")
	script := "#!/bin/sh\nhead -c 300000 /dev/zero | tr '\\0' x >&2\necho >&2\ntouch " + filepath.Join(dir, "past-the-log") + "\nexec cat >/dev/null\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Start(Options{Program: prog, Endpoint: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	s.Write(call(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "past-the-log")); err != nil {
		t.Fatalf("the exporter never got past its long log line: %v", err)
	}
}

// startShell starts an exporter whose program is the shell command cmd
// (its endpoint unused).
func startShell(tb testing.TB, cmd string) *Sink {
	tb.Helper()
	prog := filepath.Join(tb.TempDir(), "exporter")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"+cmd+"\n"), 0o755); err != nil {
		tb.Fatal(err)
	}
	s, err := Start(Options{Program: prog, Endpoint: "http://127.0.0.1:9"})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// killAndClose kills s's exporter and requires Close to end without
// error.
func killAndClose(t *testing.T, s *Sink) {
	t.Helper()
	s.killForTest()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
