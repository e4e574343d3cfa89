// Command capkit-otel is capkit's OpenTelemetry exporter: capkit serve
// and the CLI start it when [telemetry] otlp_endpoint is set and write
// their audit events to its standard input; it exports them over
// OTLP/HTTP with the OpenTelemetry Go SDK (audit/telemetry). It is a
// program of its own so that the SDK, its exporters and their protobuf
// and gRPC packages are not in capkit's binary, whose every start would
// run their package initializers.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/capkit/capkit/audit/telemetry"
	"github.com/capkit/capkit/fault"
)

func main() {
	endpoint := flag.String("endpoint", "", "the OTLP/HTTP base URL, such as http://127.0.0.1:4318")
	service := flag.String("service-name", "capkit", "the service.name resource attribute")
	version := flag.String("service-version", "", "the service.version resource attribute")
	flag.Parse()
	if *endpoint == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: capkit-otel --endpoint URL [--service-name NAME] [--service-version V] < events")
		os.Exit(2)
	}
	// One input stream, read and exported in turn: a second processor
	// adds hand-offs between goroutines and idle spinning (BenchmarkServe's
	// CPU per event about halves on one; bench/RESULTS.md). GOMAXPROCS in
	// the environment still decides.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	// The parent ends the exporter by closing its input; a signal to the
	// process group (Ctrl-C at a terminal) must not cut the last export.
	signal.Ignore(syscall.SIGINT)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	err := telemetry.Serve(context.Background(), os.Stdin, telemetry.Options{Endpoint: *endpoint, ServiceName: *service, ServiceVersion: *version, Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "capkit-otel:", err)
		os.Exit(fault.ExitCode(err))
	}
}
