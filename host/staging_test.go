package host

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// stagingPrefix is the one staging namespace, spelled out so this test
// pins it.
const stagingPrefix = ".capkit-tmp-"

// stagingMarker starts the content the killed writer was writing.
const stagingMarker = "STAGING-MARKER-51c2"

// allEffects is an actor holding every effect the file-facing tools need.
const allEffects = `
[[root]]
path = "rw"
[actor.all]
effects = ["read_file", "write_file", "edit_file", "move_file", "list", "search", "parse", "state_write", "archive_read", "archive_write", "journal_read", "journal_write"]
`

// TestMain runs a test's child process when a test re-executes the test
// binary as one: the killed writer, the bind-mount checker.
func TestMain(m *testing.M) {
	if dir := os.Getenv("CAPKIT_TEST_STAGING_WRITER"); dir != "" {
		stagingWriter(dir)
		return
	}
	if dir := os.Getenv("CAPKIT_TEST_PSEUDO_CHILD"); dir != "" {
		os.Exit(pseudoChild(dir))
	}
	// What a contained command leaves at a protected name goes to the
	// quarantine in the user's state directory: a temporary one here.
	state, err := os.MkdirTemp("", "capkit-host-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}

// stagingWriter writes 15 MiB files through write_file until it is killed.
func stagingWriter(dir string) {
	cfg, err := config.Load(filepath.Join(dir, "capkit.toml"))
	if err != nil {
		panic(err)
	}
	h, err := New(cfg, nil)
	if err != nil {
		panic(err)
	}
	s, err := h.NewSession("all", true)
	if err != nil {
		panic(err)
	}
	content := stagingMarker + strings.Repeat("x", 15*limits.MiB-len(stagingMarker))
	for i := 0; ; i++ {
		args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("big-%d.txt", i), "content": content})
		if _, err := s.Call(context.Background(), "write_file", args); err != nil {
			panic(err)
		}
	}
}

// killWriterMidway starts the writer and SIGKILLs it as soon as a staging
// file shows in rw, which it returns the name of.
func killWriterMidway(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CAPKIT_TEST_STAGING_WRITER="+dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	deadline := time.Now().Add(2 * time.Minute) // a hang guard, not a timing assertion
	for time.Now().Before(deadline) {
		names, _ := os.ReadDir(filepath.Join(dir, "rw"))
		for _, e := range names {
			if strings.HasPrefix(e.Name(), stagingPrefix) {
				cmd.Process.Signal(syscall.SIGKILL)
				return e.Name()
			}
		}
		time.Sleep(time.Millisecond) // leave the writer the processor
	}
	cmd.Process.Signal(syscall.SIGKILL)
	t.Fatal("the writer never created a staging file")
	return ""
}

// TestStagingNamespaceAcrossTools kills a server while write_file writes a
// 15 MiB file, then drives every tool that lists, walks, stats, reads,
// copies or archives: none may show or serve the leftover, and none may
// create a name in the staging namespace. A later write in the directory
// removes the leftover, whose writer is gone.
func TestStagingNamespaceAcrossTools(t *testing.T) {
	dir := fixture(t)
	cfg := load(t, dir, allEffects)
	leftover := killWriterMidway(t, dir)
	// Files the writer completed before the kill are ordinary content.
	done, _ := filepath.Glob(filepath.Join(dir, "rw", "big-*.txt"))
	for _, p := range done {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "rw", "stage"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, s := startSession(t, cfg, "all")
	hidden := func(tool, args string) {
		t.Helper()
		res, err := s.Call(context.Background(), tool, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		if out := resultText(t, res); strings.Contains(out, leftover) || strings.Contains(out, stagingMarker) {
			t.Errorf("%s %s shows the staging leftover:\n%.600s", tool, args, out)
		}
	}
	hidden("list_dir", `{"path": "."}`)
	hidden("glob", `{"pattern": "**"}`)
	hidden("glob", `{"pattern": ".capkit-*"}`)
	hidden("grep", `{"pattern": "`+stagingMarker+`"}`)
	hidden("tree_list", `{"path": "."}`)
	hidden("dir_tree", `{"path": "."}`)

	refused := func(tool, args string) {
		t.Helper()
		res, err := s.Call(context.Background(), tool, json.RawMessage(args))
		switch fault.CodeOf(err) {
		case fault.InvalidInput, fault.Denied:
			if !strings.Contains(err.Error(), "reserved") {
				t.Errorf("%s %s: refusal does not say the name is reserved: %v", tool, args, err)
			}
		case "":
			// read_files reports each file's failure inside its result.
			if out := resultText(t, res); tool != "read_files" || !strings.Contains(out, `"code":"invalid_input"`) || !strings.Contains(out, "reserved") || strings.Contains(out, stagingMarker) {
				t.Errorf("%s %s: served the staging namespace: %.300s", tool, args, out)
			}
		default:
			t.Errorf("%s %s: %v, want invalid_input or denied naming the reserved namespace", tool, args, err)
		}
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	L := q(leftover)
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path": ` + L + `}`},
		{"read_files", `{"files": [{"path": ` + L + `}]}`},
		{"file_info", `{"path": ` + L + `}`},
		{"dir_tree", `{"path": ` + L + `}`},
		{"create_directory", `{"path": ".capkit-tmp-d"}`},
		{"tree_stamp", `{"path": ` + L + `}`},
		{"tree_list", `{"path": ` + L + `}`},
		{"list_dir", `{"path": ` + L + `}`},
		{"grep", `{"pattern": "x", "path": ` + L + `}`},
		{"glob", `{"pattern": "*", "path": ` + L + `}`},
		{"file_digest", `{"path": ` + L + `}`},
		{"file_copy", `{"source": ` + L + `, "destination": "copied.txt"}`},
		{"file_copy", `{"source": "a.txt", "destination": ".capkit-tmp-made"}`},
		{"zip_create", `{"archive": "x.zip", "dir": ".", "files": [` + L + `]}`},
		{"zip_create", `{"archive": ".capkit-tmp-x.zip", "dir": ".", "files": ["a.txt"]}`},
		{"dir_publish", `{"staging": ` + L + `, "destination": "pub"}`},
		{"dir_publish", `{"staging": "stage", "destination": ".capkit-tmp-pub"}`},
		{"state_replace", `{"path": ` + L + `, "content": "x"}`},
		{"state_replace", `{"path": ".capkit-tmp-state", "content": "x"}`},
		{"journal_append", `{"dir": ".capkit-tmp-j", "name": "j", "event": {}}`},
		{"journal_read", `{"dir": ".capkit-tmp-j", "name": "j"}`},
		{"write_file", `{"path": ".capkit-tmp-w", "content": "x"}`},
		{"write_file", `{"path": "sub/.capkit-tmp-w/x", "content": "x"}`},
		{"edit_file", `{"path": ` + L + `, "old_string": "x", "new_string": "y"}`},
		{"move_file", `{"source": ` + L + `, "destination": "moved.txt"}`},
		{"move_file", `{"source": "a.txt", "destination": ".capkit-tmp-m"}`},
		{"json_validate", `{"path": ` + L + `}`},
		{"text_validate", `{"path": ` + L + `}`},
		{"csv_scan", `{"path": ` + L + `}`},
		{"html_extract", `{"path": ` + L + `, "select": "text"}`},
		{"feed_parse", `{"path": ` + L + `, "url": "https://example.com/", "limit": 1}`},
		{"sniff", `{"path": ` + L + `, "expect": "json"}`},
		{"zip_extract", `{"archive": "planted.zip", "destination": "out", "expect": ` + writeZip(t, filepath.Join(dir, "rw", "planted.zip"), stagingPrefix+"member", "planted") + `}`},
	} {
		refused(c.tool, c.args)
	}
	for _, p := range []string{"copied.txt", "moved.txt", "pub", "out", ".capkit-tmp-made", ".capkit-tmp-w"} {
		if _, err := os.Lstat(filepath.Join(dir, "rw", p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "rw", leftover)); err != nil {
		t.Fatalf("the leftover is gone before any writer started in its directory: %v", err)
	}
	// zip_create is the first writer to start in rw.
	hidden("zip_create", `{"archive": "all.zip", "dir": ".", "files": ["a.txt"]}`)
	hidden("zip_list", `{"archive": "all.zip"}`)
	if _, err := os.Lstat(filepath.Join(dir, "rw", leftover)); err == nil {
		t.Error("the stale leftover survived a writer starting in its directory")
	}
	if _, err := s.Call(context.Background(), "write_file", json.RawMessage(`{"path": "after.txt", "content": "x"}`)); err != nil {
		t.Fatal(err)
	}
}

// writeZip writes an archive at path whose one member holds content, and
// returns zip_extract's expect argument for it.
func writeZip(t *testing.T, path, member, content string) string {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create(member)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(content))
	zw.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	e, _ := json.Marshal(map[string]string{member: hex.EncodeToString(sum[:])})
	return string(e)
}

func resultText(t *testing.T, r *kernel.Result) string {
	t.Helper()
	if r == nil {
		return ""
	}
	return r.Text + string(r.Structured)
}
