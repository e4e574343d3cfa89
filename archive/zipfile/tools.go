package zipfile

import (
	"context"
	"fmt"
	"math"
	"os"
	"path"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/fileio"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure the model-facing tools. A nil *ToolOptions is valid.
type ToolOptions struct {
	// Limits bound the archives the tools create, read and extract; zero
	// fields mean the package defaults.
	Limits Limits
	// Timeout bounds one call; zero means 5 minutes (a full-size archive
	// is a gigabyte of inflation and hashing).
	Timeout time.Duration
	// Protected are the paths zip_create and zip_extract may not create
	// (the zero value: .git and capkit.toml in every root); the host
	// passes its set.
	Protected capability.Protected
}

// CreateArgs are zip_create's arguments.
type CreateArgs struct {
	Archive string   `json:"archive" jsonschema:"the new archive, inside a root granted archive_write; must not exist"`
	Dir     string   `json:"dir,omitempty" jsonschema:"directory the files are named relative to; default: the first writable root; an absolute path inside any root granted archive_write"`
	Files   []string `json:"files" jsonschema:"files to archive, relative to dir; each becomes a member of that name"`
	Store   bool     `json:"store,omitempty" jsonschema:"store members uncompressed instead of deflating them"`
}

// ExtractArgs are zip_extract's arguments.
type ExtractArgs struct {
	Archive     string            `json:"archive" jsonschema:"the archive, inside a root granted archive_write"`
	Destination string            `json:"destination" jsonschema:"the new directory to create, inside a root granted archive_write; must not exist"`
	Expect      map[string]string `json:"expect" jsonschema:"every member the archive must hold: name to SHA-256 (64 hex digits)"`
}

// ListArgs are zip_list's arguments.
type ListArgs struct {
	Archive string `json:"archive" jsonschema:"the archive, inside a root granted archive_read"`
	Offset  int    `json:"offset,omitempty" jsonschema:"members to skip, in the archive's order: the previous answer's next_offset; default 0"`
}

// ListResult is zip_list's result: the members from offset on that fit
// the output bound.
type ListResult struct {
	Entries []Entry `json:"entries"`
	// Bytes is the declared uncompressed total of every member; Members
	// counts them.
	Bytes   int64 `json:"bytes"`
	Members int   `json:"members"`
	// Offset is the first member shown; NextOffset the offset of the next
	// window (0: this one reaches the last member).
	Offset     int `json:"offset,omitzero"`
	NextOffset int `json:"next_offset,omitzero"`
}

// ToolText is the result's JSON and, for a window, where it goes on.
func (r ListResult) ToolText() string {
	data, err := jsonv2.Marshal(r, jsonv2.Deterministic(true))
	if err != nil {
		return err.Error()
	}
	if r.NextOffset == 0 {
		return string(data)
	}
	return fmt.Sprintf("%s\nmembers %d..%d of %d shown: the next window is zip_list with offset=%d", data, r.Offset+1, r.NextOffset, r.Members, r.NextOffset)
}

// VerifyArgs are zip_verify's arguments.
type VerifyArgs struct {
	Archive string            `json:"archive" jsonschema:"the archive, inside a root granted archive_read"`
	Expect  map[string]string `json:"expect" jsonschema:"every member the archive must hold: name to SHA-256 (64 hex digits)"`
}

// CreateResult is zip_create's result; its members' digests are what
// zip_extract expects.
type CreateResult struct {
	Archive string       `json:"archive"`
	Bytes   int64        `json:"bytes"`
	Members []MemberInfo `json:"members"`
}

// ExtractResult is zip_extract's and zip_verify's result.
type ExtractResult struct {
	Destination string `json:"destination,omitempty"`
	Files       int    `json:"files"`
	Bytes       int64  `json:"bytes"`
}

// RegisterTools registers zip_create and zip_extract (effect archive_write)
// and zip_list and zip_verify (effect archive_read), all deferred. Every
// path is resolved in the scope of the roots the session's capabilities
// grant the tool's effect on (internal/scope), so no path or member leads
// out of a granted root, and none is made at a protected path. opts may
// be nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	lim, err := o.Limits.resolve()
	if err != nil {
		return err
	}
	if o.Timeout == 0 {
		o.Timeout = limits.ZipDefaultTimeout
	}
	bounds := fmt.Sprintf("at most %d members, %d bytes per member, %d bytes in all, a %d-byte central directory, %d path elements per name",
		lim.MaxFiles, lim.MaxMemberBytes, lim.MaxTotalBytes, lim.MaxCentralDirectoryBytes, lim.MaxPathDepth)
	t := toolSetup{lim: lim, bounds: bounds, protected: o.Protected,
		io: kernel.Policy{Timeout: o.Timeout, MaxInputBytes: limits.ZipMaxManifestBytes}}
	for _, register := range []func(*kernel.Builder, toolSetup) error{registerCreate, registerExtract, registerList, registerVerify} {
		if err := register(b, t); err != nil {
			return err
		}
	}
	return nil
}

// toolSetup is what the four tools share: the resolved limits, their
// wording for descriptions, the policy and the paths they may not create.
type toolSetup struct {
	lim       Limits
	bounds    string
	io        kernel.Policy
	protected capability.Protected
}

func (t toolSetup) policy(name string) kernel.Policy {
	p := t.io
	p.Name = name
	return p
}

func registerCreate(b *kernel.Builder, t toolSetup) error {
	p := t.policy("zip_create")
	p.MaxOutputBytes = limits.ZipCreateOutputBytes
	return kernel.AddTool(b, p, kernel.Meta{
		Effect:  capability.ArchiveWrite,
		Title:   "Create ZIP archive",
		Summary: "Create a ZIP archive from selected files; returns each member's SHA-256",
		Description: `Creates a new ZIP archive holding exactly the listed files, named relative to dir, and returns each member's size and SHA-256 (what zip_extract expects). The archive must not exist: nothing is overwritten. Regular files only; symbolic links are not followed. A file that changes while it is read fails with "integrity".
Bounds: ` + t.bounds + `.
Example: {"archive": "out/report.zip", "dir": "reports", "files": ["q1.csv", "charts/q1.png"]}`,
	}, func(ctx context.Context, call *kernel.Call, in CreateArgs) (CreateResult, error) {
		dir := in.Dir
		if dir == "" {
			dir = "."
		}
		if len(in.Files) == 0 {
			return CreateResult{}, fault.New(fault.InvalidInput, "files: name at least one file")
		}
		if len(in.Files) > t.lim.MaxFiles {
			return CreateResult{}, fault.New(fault.Limit, "%d files exceed the limit of %d members", len(in.Files), t.lim.MaxFiles)
		}
		if err := createFits(call, in); err != nil {
			return CreateResult{}, err
		}
		sc := scope.New(call.Session.Capabilities(), capability.ArchiveWrite, t.protected)
		base, err := sc.Resolve(dir)
		if err != nil {
			return CreateResult{}, err
		}
		defer base.Close()
		d, err := base.OpenDir("dir")
		if err != nil {
			return CreateResult{}, err
		}
		d.Close()
		srcs := make([]source, len(in.Files))
		for i, name := range in.Files {
			srcs[i] = source{name: name, open: func() (*fileio.File, error) { return openSource(base, name) }}
		}
		archive, err := newEntry(sc, in.Archive, false)
		if err != nil {
			return CreateResult{}, err
		}
		defer archive.Close()
		res, err := createInto(ctx, srcs, archive, CreateOptions{Limits: t.lim, Store: in.Store})
		if err != nil {
			return CreateResult{}, err
		}
		return CreateResult{Archive: in.Archive, Bytes: res.Bytes, Members: res.Members}, nil
	})
}

// openSource opens the file name (relative to base, never climbing out
// of it) to archive.
func openSource(base *scope.Target, name string) (*fileio.File, error) {
	t, err := base.Join(name)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return fileio.OpenTarget(t, "file")
}

// createFits fails with limit, before anything is written, when the
// result of archiving in.Files (every member's name, size and SHA-256)
// could exceed the call's output bound: that result is the receipt of
// work that cannot be asked for again in windows.
func createFits(call *kernel.Call, in CreateArgs) error {
	r := CreateResult{Archive: in.Archive, Bytes: math.MaxInt64, Members: make([]MemberInfo, len(in.Files))}
	for i, name := range in.Files {
		r.Members[i] = MemberInfo{Name: name, Size: math.MaxInt64, SHA256: strings.Repeat("0", 64)}
	}
	res, err := kernel.Encode(r)
	if err != nil {
		return err
	}
	if res.Size() > call.MaxOutputBytes {
		return toolkit.UnitTooLarge(call, fmt.Sprintf("the receipt of %d members", len(in.Files)), res.Size(), "archive fewer files per call")
	}
	return nil
}

func registerExtract(b *kernel.Builder, t toolSetup) error {
	return kernel.AddTool(b, t.policy("zip_extract"), kernel.Meta{
		Effect:  capability.ArchiveWrite,
		Title:   "Extract ZIP archive",
		Summary: "Extract a ZIP archive whose members you know by SHA-256 into a new directory",
		Description: `Extracts an archive into a new directory, given every member's SHA-256. The archive must hold exactly the expected members (an unexpected, missing or mismatching member fails with "integrity") and the directory appears only when every member was written and verified: on any failure nothing is left behind. The destination must not exist.
Refused: encrypted members, symlinks and other special files, names that are absolute, contain ".." or backslashes, or collide (including by case or Unicode normalisation). Extracted files are private (0600; directories 0700).
Bounds: ` + t.bounds + `.
Example: {"archive": "downloads/data.zip", "destination": "work/data", "expect": {"data.csv": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}`,
	}, func(ctx context.Context, call *kernel.Call, in ExtractArgs) (ExtractResult, error) {
		sc := scope.New(call.Session.Capabilities(), capability.ArchiveWrite, t.protected)
		expect, err := parseExpect(in.Expect)
		if err != nil {
			return ExtractResult{}, err
		}
		src, err := openArchiveIn(sc, in.Archive)
		if err != nil {
			return ExtractResult{}, err
		}
		defer src.Close()
		// The directory appears by a rename: no member can be protected
		// unless the destination is one or holds one.
		dest, err := newEntry(sc, in.Destination, true)
		if err != nil {
			return ExtractResult{}, err
		}
		defer dest.Close()
		res, err := extractInto(ctx, src, dest, expect, ExtractOptions{Limits: t.lim})
		if err != nil {
			return ExtractResult{}, err
		}
		return ExtractResult{Destination: in.Destination, Files: res.Files, Bytes: res.Bytes}, nil
	})
}

func registerList(b *kernel.Builder, t toolSetup) error {
	return kernel.AddTool(b, t.policy("zip_list"), kernel.Meta{
		Effect:  capability.ArchiveRead,
		Title:   "List ZIP archive",
		Summary: "List a ZIP archive's members after checking its structure",
		Description: `Checks an archive's structure as zip_extract would (names, member kinds, encryption, declared sizes, bounds) without decompressing anything, and lists its members with their declared sizes; directories end in "/". Sizes are as declared: zip_verify checks the data. Members past the output bound (` + limits.Bytes(limits.DefaultMaxOutputBytes) + ` unless the host sets another) come as a window with next_offset, the offset of the next call.
Bounds: ` + t.bounds + `.
Example: {"archive": "downloads/data.zip"}`,
	}, func(ctx context.Context, call *kernel.Call, in ListArgs) (ListResult, error) {
		f, err := openArchiveIn(scope.New(call.Session.Capabilities(), capability.ArchiveRead, t.protected), in.Archive)
		if err != nil {
			return ListResult{}, err
		}
		defer f.Close()
		l, err := listFile(ctx, f, &ReadOptions{Limits: t.lim})
		if err != nil {
			return ListResult{}, err
		}
		return listWindow(call, l, in.Offset)
	})
}

// listWindow is the result holding l's members from offset on that fit
// the call's output bound.
func listWindow(call *kernel.Call, l *Listing, offset int) (ListResult, error) {
	return toolkit.Prefix(call, l.Entries, offset, "member", func(shown []Entry, next int) ListResult {
		return ListResult{Entries: shown, Bytes: l.Bytes, Members: len(l.Entries), Offset: offset, NextOffset: next}
	})
}

func registerVerify(b *kernel.Builder, t toolSetup) error {
	return kernel.AddTool(b, t.policy("zip_verify"), kernel.Meta{
		Effect:  capability.ArchiveRead,
		Title:   "Verify ZIP archive",
		Summary: "Check that a ZIP archive holds exactly the members you expect, by SHA-256, without extracting",
		Description: `Decompresses every member of an archive and checks it against the expected SHA-256, exactly as zip_extract does, writing nothing. Fails with "integrity" on an unexpected, missing or mismatching member.
Bounds: ` + t.bounds + `.
Example: {"archive": "downloads/data.zip", "expect": {"data.csv": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}`,
	}, func(ctx context.Context, call *kernel.Call, in VerifyArgs) (ExtractResult, error) {
		expect, err := parseExpect(in.Expect)
		if err != nil {
			return ExtractResult{}, err
		}
		f, err := openArchiveIn(scope.New(call.Session.Capabilities(), capability.ArchiveRead, t.protected), in.Archive)
		if err != nil {
			return ExtractResult{}, err
		}
		defer f.Close()
		res, err := verifyFile(ctx, f, expect, &ReadOptions{Limits: t.lim})
		if err != nil {
			return ExtractResult{}, err
		}
		return ExtractResult{Files: res.Files, Bytes: res.Bytes}, nil
	})
}

func parseExpect(m map[string]string) (Expect, error) {
	if len(m) == 0 {
		return nil, fault.New(fault.InvalidInput, "expect: name every member with its SHA-256")
	}
	e := make(Expect, len(m))
	for name, hexDigest := range m {
		d, err := ParseDigest(hexDigest)
		if err != nil {
			return nil, fault.New(fault.InvalidInput, "expect[%q]: %s", name, fault.As(err).Message)
		}
		e[name] = d
	}
	return e, nil
}

// openArchiveIn opens the archive p names in sc: a regular file, never
// through a symlink as its last element.
func openArchiveIn(sc *scope.Scope, p string) (*os.File, error) {
	t, err := sc.Resolve(p)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	f, _, err := t.OpenRegular(path.Base(t.Name()))
	return f, err
}

// newEntry is the target of the new entry p in sc, once the protected
// paths allow creating it (rename: as a directory renamed into place).
func newEntry(sc *scope.Scope, p string, rename bool) (*scope.Target, error) {
	t, err := sc.Resolve(p)
	if err != nil {
		return nil, err
	}
	if t.Name() == "." {
		t.Close()
		return nil, fault.New(fault.InvalidInput, "name a new entry inside a granted root, not the root itself")
	}
	check := t.CheckWrite
	if rename {
		check = t.CheckRename
	}
	if err := check(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}
