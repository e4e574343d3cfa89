package limits

// Staging files (the reserved namespace of content being written).
const (
	// StagingSweptDirs bounds the directories a process remembers having
	// swept for stale staging files; past it the memory is cleared and
	// directories are swept again on their next write.
	StagingSweptDirs = 4_096
)

// SymlinkMaxHops bounds the symbolic links followed to reach one file (as
// Linux's MAXSYMLINKS does); one more is refused.
const SymlinkMaxHops = 40

// RootCacheEntries bounds the granted roots a process keeps open; past
// it, further roots are opened on every call.
const RootCacheEntries = 256
