package limits

// Model-facing file tools: windows, paging and the token-sized output
// bound.
const (
	// ToolTextBytes is the default output bound of the file tools: about
	// 25,000 tokens, what a model can take in one result. A read window or
	// a listing that would exceed it stops on a whole line and says where
	// to go on. A host raises it per tool with the policy's max output
	// bytes.
	ToolTextBytes = 100 * KiB
	// ToolTextReserveBytes is kept free of a window's text for the
	// result's footer and structured content.
	ToolTextReserveBytes = 2 * KiB
	// ReadFrameBytes bounds what a read_file result holds besides its
	// lines and its path: the footer line and the other members of its
	// structured content. Under a small output bound it, not
	// ToolTextReserveBytes, is what a window's text leaves free.
	ReadFrameBytes = 640

	// ReadVersionMaxBytes: a file up to this size is read to its end
	// (counting its lines and learning its version, so it may be edited
	// or replaced after a partial read); a larger one is read only as far
	// as the window.
	ReadVersionMaxBytes = EditMaxFileBytes
	// ReadMaxLineScanBytes bounds the bytes read past a cut line while
	// looking for its end; a longer line ends the window there.
	ReadMaxLineScanBytes = 16 * MiB
	// ReadTailMaxLines bounds read_file's tail argument.
	ReadTailMaxLines = 100_000
	// ReadTailBlockBytes is the block a tail read reads backwards.
	ReadTailBlockBytes = 64 * KiB
	// ReadImageMaxBytes bounds an image read_file returns as image content.
	ReadImageMaxBytes = 4 * MiB
	// ReadSniffBytes is how much of a file's start decides whether it is
	// an image or binary.
	ReadSniffBytes = 512

	// ReadFilesMaxPaths bounds read_files' paths.
	ReadFilesMaxPaths = 20

	// ListMaxOffset bounds list_dir's offset (a directory has at most
	// WalkMaxFiles entries).
	ListMaxOffset = WalkMaxFiles

	// DirTreeDefaultDepth and DirTreeMaxDepth bound dir_tree's depth;
	// DirTreeDefaultEntries and DirTreeMaxEntries the entries it shows.
	DirTreeDefaultDepth   = 3
	DirTreeMaxDepth       = 16
	DirTreeDefaultEntries = 500
	DirTreeMaxEntries     = 5_000

	// EditMaxEdits bounds edit_file's edits.
	EditMaxEdits = 100
)

// ReadTailMaxScanBytes bounds how far back from the end a tail read looks
// for the start of its lines.
const ReadTailMaxScanBytes = 64 * MiB
