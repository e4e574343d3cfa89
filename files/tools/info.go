package tools

import (
	"context"
	"fmt"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

const infoDescription = `Describes one file, directory or symbolic link without reading it: its type, size in bytes, permissions and modification time. A symbolic link is described itself, not followed.
Example: {"path": "src/main.go"}`

// InfoArgs are file_info's arguments.
type InfoArgs struct {
	Path string `json:"path" jsonschema:"the entry: relative to the first writable root, or absolute inside any root (list_roots lists them)"`
}

// InfoResult is file_info's result.
type InfoResult struct {
	Path    string `json:"path"`
	Type    string `json:"type" jsonschema:"file, directory, symlink, fifo, socket, device or special"`
	Size    int64  `json:"size"`
	Mode    string `json:"mode" jsonschema:"permission bits in octal, e.g. 0644"`
	ModTime string `json:"mod_time" jsonschema:"RFC 3339, UTC"`

	text string
}

func (r InfoResult) ToolText() string { return r.text }

func (x *executor) fileInfo(ctx context.Context, req request, in InfoArgs) (InfoResult, error) {
	t, err := x.resolve(req.caps, capability.List, in.Path)
	if err != nil {
		return InfoResult{}, err
	}
	defer t.Close()
	info, err := x.provider.Stat(ctx, t.Target)
	if err != nil {
		return InfoResult{}, err
	}
	return InfoResult{
		Path: t.display, Type: typeName(info.Mode), Size: info.Size,
		Mode:    fmt.Sprintf("%04o", uint32(info.Mode.Perm())),
		ModTime: info.ModTime.UTC().Format("2006-01-02T15:04:05Z07:00"),
		text:    t.display + ": " + infoText(info) + "\n",
	}, nil
}

var mkdirDescription = fmt.Sprintf(`Creates a directory and any missing parent directories inside a writable root. A directory that already exists is not an error (the result says it existed); a file or anything else at the path is. Paths are at most %d bytes.
Example: {"path": "src/pkg/util"}`, limits.PathMaxBytes)

// MkdirArgs are create_directory's arguments.
type MkdirArgs struct {
	Path string `json:"path" jsonschema:"the directory: relative to the first writable root, or absolute inside one"`
}

// MkdirResult reports create_directory.
type MkdirResult struct {
	Path    string `json:"path"`
	Created bool   `json:"created"`
}

func (r MkdirResult) ToolText() string {
	if r.Created {
		return "created directory " + r.Path
	}
	return r.Path + " already exists as a directory; nothing changed"
}

func (x *executor) createDirectory(ctx context.Context, req request, in MkdirArgs) (MkdirResult, error) {
	dm, ok := x.provider.(files.DirMaker)
	if !ok {
		return MkdirResult{}, fault.New(fault.Unavailable, "this host's file provider cannot create directories")
	}
	t, err := x.resolveChange(req.caps, capability.WriteFile, in.Path)
	if err != nil {
		return MkdirResult{}, err
	}
	defer t.Close()
	if t.name == "." {
		return MkdirResult{Path: t.display}, nil
	}
	created, err := dm.MakeDir(ctx, t.Target)
	if err != nil {
		return MkdirResult{}, err
	}
	return MkdirResult{Path: t.display, Created: created}, nil
}
