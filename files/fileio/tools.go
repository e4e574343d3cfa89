package fileio

import (
	"context"
	"fmt"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure the model-facing tools. A nil *ToolOptions is
// valid.
type ToolOptions struct {
	// MaxStreamBytes is the byte budget of one file_digest or file_copy
	// call; a model may ask for less, never more. Zero means
	// limits.FileToolStreamBytes (1 GiB).
	MaxStreamBytes int64
	// Timeout bounds one call; zero means the kernel's default.
	Timeout time.Duration
	// Events is the file tools' policy seam: file_copy offers each new
	// destination to its write gate as a creation, as write_file does, so
	// a host's gate can veto it. Nil means no gate. (A copy never
	// replaces: its destination must not exist.)
	Events *files.Events
	// Protected are the paths file_copy may not create (the zero value:
	// .git and capkit.toml in every root); the host passes its set.
	Protected capability.Protected
}

func (o *ToolOptions) budget() int64 {
	if o == nil || o.MaxStreamBytes <= 0 {
		return limits.FileToolStreamBytes
	}
	return o.MaxStreamBytes
}

// DigestArgs are file_digest's arguments.
type DigestArgs struct {
	Path     string `json:"path" jsonschema:"file to digest: relative to the first writable root, or absolute inside any root (list_roots lists them)"`
	MaxBytes int64  `json:"max_bytes,omitempty" jsonschema:"fail instead of digesting a file larger than this; default and maximum: the host's budget"`
}

// DigestResult is file_digest's result.
type DigestResult struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ToolText is what the model reads.
func (r DigestResult) ToolText() string {
	return fmt.Sprintf("sha256 %s (%d bytes)", r.SHA256, r.Size)
}

// CopyArgs are file_copy's arguments.
type CopyArgs struct {
	Source      string `json:"source" jsonschema:"regular file to copy, inside a readable root"`
	Destination string `json:"destination" jsonschema:"new file to create, inside a writable root; must not exist"`
	MaxBytes    int64  `json:"max_bytes,omitempty" jsonschema:"fail instead of copying a file larger than this; default and maximum: the host's budget"`
}

// CopyResult is file_copy's result.
type CopyResult struct {
	Bytes int64 `json:"bytes"`
}

// ToolText is what the model reads.
func (r CopyResult) ToolText() string { return fmt.Sprintf("copied %d bytes", r.Bytes) }

// RegisterTools registers file_digest (effect read_file) and file_copy
// (effect write_file; the source must also lie in a root granted
// read_file). Both are deferred. Paths are resolved in the scope of the
// roots the session's capabilities grant the effect on (internal/scope),
// so no path leads out of a granted root and no copy is made at a
// protected path. opts may be nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	t := toolSetup{budget: opts.budget()}
	if opts != nil {
		t.timeout, t.events, t.protected = opts.Timeout, opts.Events, opts.Protected
	}
	if err := t.registerDigest(b); err != nil {
		return err
	}
	return t.registerCopy(b)
}

// toolSetup is what the file tools share: their deadline, the seam's
// events, the paths they may not create and the largest file they read.
type toolSetup struct {
	timeout   time.Duration
	events    *files.Events
	protected capability.Protected
	budget    int64
}

func (t toolSetup) registerDigest(b *kernel.Builder) error {
	return kernel.AddTool(b, kernel.Policy{Name: "file_digest", Timeout: t.timeout},
		kernel.Meta{
			Effect:  capability.ReadFile,
			Title:   "File digest",
			Summary: "SHA-256 digest of one regular file, streamed, without reading it into the conversation",
			Description: fmt.Sprintf(`Computes the SHA-256 digest of one regular file and returns it with the file's size.
Symbolic links are never followed; directories, FIFOs and devices are refused. A file larger than max_bytes (default and maximum %d bytes) fails with "limit" before it is read. A file that changes while it is read fails with "integrity": retry when it is stable.
Example: {"path": "dist/app.tar.gz"}`, t.budget),
		},
		func(ctx context.Context, call *kernel.Call, in DigestArgs) (DigestResult, error) {
			maxBytes, err := modelBudget(in.MaxBytes, t.budget)
			if err != nil {
				return DigestResult{}, err
			}
			f, err := t.openSource(call, in.Path, "file")
			if err != nil {
				return DigestResult{}, err
			}
			defer f.Close()
			s, err := digest(ctx, f, maxBytes, nil)
			return DigestResult(s), err
		})
}

// openSource opens the regular file p names in the roots granted
// read_file.
func (t toolSetup) openSource(call *kernel.Call, p, role string) (*File, error) {
	src, err := scope.New(call.Session.Capabilities(), capability.ReadFile, t.protected).Resolve(p)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return OpenTarget(src, role)
}

func (t toolSetup) registerCopy(b *kernel.Builder) error {
	return kernel.AddTool(b, kernel.Policy{Name: "file_copy", Timeout: t.timeout},
		kernel.Meta{
			Effect:  capability.WriteFile,
			Title:   "Copy file",
			Summary: "Copy one regular file to a new file; never overwrites",
			Description: fmt.Sprintf(`Copies one regular file to a new file, creating missing parent directories of the destination (as write_file does). The destination must not exist: an existing destination fails with "conflict" and is left untouched. The copy appears only when complete and is private (mode 0600).
The source must be in a readable root and the destination in a writable root. Symbolic links are never followed; directories, FIFOs and devices are refused. A source larger than max_bytes (default and maximum %d bytes) fails with "limit" before anything is written; a source that changes while it is copied fails with "integrity" and nothing is created.
Example: {"source": "report.pdf", "destination": "archive/report-2024.pdf"}`, t.budget),
		},
		t.handleCopy)
}

// handleCopy is file_copy's handler: the source is opened (and its size
// checked) before anything is made for the destination; the destination
// is checked against the protected paths, offered to the write gate, and
// only then are its parents made and the copy written.
func (t toolSetup) handleCopy(ctx context.Context, call *kernel.Call, in CopyArgs) (CopyResult, error) {
	maxBytes, err := modelBudget(in.MaxBytes, t.budget)
	if err != nil {
		return CopyResult{}, err
	}
	src, err := t.openSource(call, in.Source, "source")
	if err != nil {
		return CopyResult{}, err
	}
	defer src.Close()
	if src.Size() > maxBytes {
		return CopyResult{}, fault.LimitExceeded("source bytes", maxBytes, src.Size())
	}
	dst, err := scope.New(call.Session.Capabilities(), capability.WriteFile, t.protected).Resolve(in.Destination)
	if err != nil {
		return CopyResult{}, err
	}
	defer dst.Close()
	if err := dst.CheckWrite(); err != nil {
		return CopyResult{}, err
	}
	if t.events != nil {
		if err := t.events.ExpectWrite(ctx, &files.Expectation{Session: call.Session, Op: files.OpWrite, Root: dst.Root(), Name: dst.Name()}); err != nil {
			return CopyResult{}, err
		}
	}
	n, err := copyTo(ctx, src, dst, maxBytes, nil, true)
	return CopyResult{Bytes: n}, err
}

// modelBudget applies a model's optional max_bytes under the host budget:
// asking for more is refused, not clamped.
func modelBudget(asked, budget int64) (int64, error) {
	switch {
	case asked == 0:
		return budget, nil
	case asked < 0:
		return 0, fault.New(fault.InvalidInput, "max_bytes must be positive")
	case asked > budget:
		return 0, fault.New(fault.Limit, "max_bytes %d exceeds this tool's budget of %d bytes", asked, budget)
	}
	return asked, nil
}
