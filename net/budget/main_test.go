package budget

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(m.Run()) // a child process runs one test body, no server
	}
	os.Exit(pgtest.Main(m))
}

// stores are the two backends each accounting test runs on: a fresh
// locator per call.
var stores = []struct {
	name    string
	locator func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "root") }},
	{"postgres", func(t *testing.T) string { return pgtest.URL(t) }},
}

// eachStore runs fn once per backend.
func eachStore(t *testing.T, fn func(t *testing.T, locator string)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { fn(t, s.locator(t)) })
	}
}
