// Package pgtest runs a real PostgreSQL server for a test package: initdb
// and pg_ctl (Debian's postgresql package; scripts/need-postgres.sh
// installs it) in a temporary directory, listening only on a Unix socket,
// as the unprivileged system user User when the tests run as root
// (PostgreSQL refuses to run as root). Each test gets a fresh database.
//
// Without the server binaries, tests that need it skip with a message,
// except under CI=true, where they fail.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

// User is the system user the server runs as when tests run as root.
const User = "capkit-pg"

var (
	once    sync.Once
	server  *Server
	failure string
	dbSeq   atomic.Int64
)

// Server is a running PostgreSQL server.
type Server struct {
	dir   string
	bin   string
	asUID bool
	opts  string // the postgres options it was started with
}

// Main runs the package's tests and stops the server if one of them
// started it, returning the exit code for os.Exit.
func Main(m *testing.M) int {
	code := m.Run()
	if server != nil {
		server.Stop()
	}
	return code
}

// URL returns the URL of a new, empty database on the package's server,
// started by the first call (fsync off: the tests kill clients, not the
// server), or skips (fails under CI=true) when there is no server.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		s, err := Start("-c", "fsync=off", "-c", "synchronous_commit=off")
		if err != nil {
			failure = err.Error()
			return
		}
		server = s
	})
	if server == nil {
		msg := "PostgreSQL is not available (run scripts/need-postgres.sh): " + failure
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	if err := server.CreateDB(name); err != nil {
		t.Fatal(err)
	}
	return server.URL(name)
}

// Start runs initdb and starts a server with the extra postgres options.
func Start(options ...string) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "capkit-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin, asUID: os.Geteuid() == 0}
	if err := s.prepare(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	s.opts = strings.Join(append([]string{"-c", "listen_addresses=", "-c", "unix_socket_directories=" + dir}, options...), " ")
	if err := s.Resume(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Pause stops the server at once, keeping its data: clients see it go
// away as they would a crashed or unreachable store, until Resume.
func (s *Server) Pause() error {
	if out, err := s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// Resume starts the server (again) on its data, with the options it was
// started with.
func (s *Server) Resume() error {
	if out, err := s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-l", filepath.Join(s.dir, "log"), "-w", "-o", s.opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("pg_ctl start: %v: %s %s", err, out, log)
	}
	return nil
}

// prepare makes the directory the server user's.
func (s *Server) prepare() error {
	if !s.asUID {
		return nil
	}
	u, err := user.Lookup(User)
	if err != nil {
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", User).CombinedOutput(); err != nil {
			return fmt.Errorf("useradd %s: %v: %s", User, err, out)
		}
		if u, err = user.Lookup(User); err != nil {
			return err
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(s.dir, uid, gid)
}

func (s *Server) run(tool string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, tool)
	var cmd *exec.Cmd
	if s.asUID {
		cmd = exec.Command("runuser", append([]string{"-u", User, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.dir
	return cmd.CombinedOutput()
}

// binDir finds the server binaries: beside initdb on PATH (Debian's
// wrappers resolve to the versioned directory), or Debian's layout.
func binDir() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) > 0 {
		return filepath.Dir(matches[len(matches)-1]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("initdb not found")
}

// URL is the URL of database name.
func (s *Server) URL(name string) string {
	return "postgres://postgres@/" + name + "?host=" + s.dir
}

// CreateDB creates database name.
func (s *Server) CreateDB(name string) error {
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(context.Background(), "CREATE DATABASE "+name)
	return err
}

// Stop stops the server at once and removes its directory.
func (s *Server) Stop() {
	s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(s.dir)
}
