package state

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/internal/testkit"
)

// The crash tests re-run this test binary as a child that replaces state or
// publishes directories in a loop, kill it with SIGKILL at a random moment,
// and check what it left. The child is selected by crashEnv.
const crashEnv = "CAPKIT_STATE_CRASH_CHILD"

const (
	crashRounds    = 20
	stateBytes     = 256 << 10
	publishedFiles = 16
)

// version is state version v: stateBytes copies of one byte, so a mix of
// two versions or a short file is visible.
func version(v int) []byte { return bytes.Repeat([]byte{byte('a' + v%26)}, stateBytes) }

func fileContent(round, i int) string {
	return strings.Repeat(fmt.Sprintf("round %d file %d\n", round, i), 512)
}

// TestCrashChild is the child's body; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	mode := os.Getenv(crashEnv)
	if mode == "" {
		t.Skip("runs only as the crash tests' child")
	}
	dir := os.Getenv(crashEnv + "_DIR")
	ready := false
	for v := 1; ; v++ {
		switch mode {
		case "replace":
			if err := Replace(context.Background(), filepath.Join(dir, "state"), version(v)); err != nil {
				fmt.Println("error:", err)
				os.Exit(3)
			}
		case "publish":
			staging := filepath.Join(dir, ".staging-"+strconv.Itoa(v))
			if err := os.Mkdir(staging, 0o700); err != nil {
				fmt.Println("error:", err)
				os.Exit(3)
			}
			for i := range publishedFiles {
				if err := os.WriteFile(filepath.Join(staging, strconv.Itoa(i)), []byte(fileContent(v, i)), 0o600); err != nil {
					fmt.Println("error:", err)
					os.Exit(3)
				}
			}
			if err := Publish(context.Background(), staging, filepath.Join(dir, "pub-"+strconv.Itoa(v)), nil); err != nil {
				fmt.Println("error:", err)
				os.Exit(3)
			}
		}
		if !ready {
			fmt.Println("ready")
			ready = true
		}
	}
}

// runAndKill starts the child in mode on dir, waits until it has completed
// one operation, lets it run for a random moment and kills it.
func runAndKill(t *testing.T, mode, dir string, rng *rand.Rand) {
	t.Helper()
	child := testkit.StartChild(t, "TestCrashChild", crashEnv+"="+mode, crashEnv+"_DIR="+dir)
	line, _ := bufio.NewReader(child.Stdout).ReadString('\n')
	if line != "ready\n" {
		child.Kill(t)
		child.Wait()
		t.Fatalf("child did not start: %q", line)
	}
	time.Sleep(time.Duration(rng.IntN(20_000)) * time.Microsecond)
	child.Kill(t)
	if killed, err := child.Wait(); !killed {
		t.Fatalf("child ended before it was killed: %v", err)
	}
}

func TestCrashDuringReplace(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	must(t, Replace(context.Background(), path, version(0)))
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	for round := range crashRounds {
		runAndKill(t, "replace", dir, rng)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("round %d: state unreadable after a crash: %v", round, err)
		}
		if len(b) != stateBytes || !bytes.Equal(b, bytes.Repeat(b[:1], stateBytes)) {
			t.Fatalf("round %d: torn state: %d bytes starting %q", round, len(b), b[:min(len(b), 8)])
		}
		if st, _ := os.Stat(path); st.Mode() != 0o600 {
			t.Fatalf("round %d: mode %v", round, st.Mode())
		}
	}
}

func TestCrashDuringPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	rng := rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))
	published := 0
	for round := range crashRounds {
		dir := t.TempDir()
		runAndKill(t, "publish", dir, rng)
		ents, err := os.ReadDir(dir)
		must(t, err)
		for _, e := range ents {
			name, ok := strings.CutPrefix(e.Name(), "pub-")
			if !ok {
				continue
			}
			v, _ := strconv.Atoi(name)
			published++
			files, err := os.ReadDir(filepath.Join(dir, e.Name()))
			must(t, err)
			if len(files) != publishedFiles {
				t.Fatalf("round %d: %s published with %d of %d files", round, e.Name(), len(files), publishedFiles)
			}
			for i := range publishedFiles {
				b, err := os.ReadFile(filepath.Join(dir, e.Name(), strconv.Itoa(i)))
				if err != nil || string(b) != fileContent(v, i) {
					t.Fatalf("round %d: %s/%d is partial: %d bytes, %v", round, e.Name(), i, len(b), err)
				}
			}
		}
	}
	if published == 0 {
		t.Fatal("no directory was ever published; the test checked nothing")
	}
}
