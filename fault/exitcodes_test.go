package fault

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write docs/exit-codes.md from Codes and ExitCode")

// meanings say what a failure of each code means to the person who reads
// the exit code; TestExitCodesDoc requires one for every code.
var meanings = map[Code]string{
	Internal:     "a bug in capkit or a tool",
	InvalidInput: "bad arguments or a malformed document; nothing changed",
	NotFound:     "no such file, tool or entry",
	Conflict:     "the file changed since it was read, or the destination exists",
	Denied:       "not granted, or outside the roots",
	Limit:        "a bound was reached (calls, bytes, time, entries, depth)",
	Unavailable:  "temporarily or on this platform not possible",
	Deferred:     "admitted later; the failure says when",
	Integrity:    "content is not what it must be (digest mismatch, changed during a read, access screen)",
	IO:           "the storage failed",
	HTTP:         "an HTTP failure",
	TLS:          "a TLS failure",
	Upstream:     "another MCP server's tool reported its own failure (its text, marked as its)",
}

// exitCodesDoc is docs/exit-codes.md as Codes and ExitCode make it.
func exitCodesDoc(t *testing.T) string {
	var b strings.Builder
	b.WriteString(`# Exit codes

Generated from package fault (` + "`go test ./fault -run TestExitCodesDoc -update`" + `);
a test fails when this page and the code differ.

Every capkit command exits with the code of its failure's fault, and an MCP
client reads the same name: a failed call is an ` + "`isError`" + ` result whose
text is ` + "`code: message`" + ` (with ` + "` (retry after Ns)`" + ` when a retry may be
admitted later, then the failure's detail, such as a command's output,
when it has one), with ` + "`_meta[\"capkit/fault\"]`" + ` holding
` + "`{\"code\", \"message\", \"retry_after_seconds\", \"detail\"}`" + ` (the object
` + "`capkit --json`" + ` prints as ` + "`{\"error\": …}`" + `; without ` + "`--json`" + ` standard error
has the same text after ` + "`capkit: `" + `). Commands that run a
command of yours (` + "`capkit run`" + `, ` + "`capkit test`" + `) exit with that command's own
code.

| code | fault | meaning |
|---|---|---|
| 0 | | success |
`)
	for _, c := range Codes {
		m, ok := meanings[c]
		if !ok {
			t.Errorf("code %s has no meaning in meanings", c)
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", c.ExitCode(), c, m)
	}
	return b.String()
}

func TestExitCodesDoc(t *testing.T) {
	const path = "../docs/exit-codes.md"
	want := exitCodesDoc(t)
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("%s is stale (or unreadable: %v): run go test ./fault -run TestExitCodesDoc -update", path, err)
	}
}
