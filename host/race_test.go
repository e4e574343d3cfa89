//go:build race

package host

// raceDetector: this test binary has the race detector's instrumentation.
const raceDetector = true
