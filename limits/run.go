package limits

import "time"

// Contained commands (run_shell, run_test, run_build).
const (
	// RunDefaultOutputBytes bounds what is kept of each of a command's
	// standard output and standard error; beyond it the head and the tail
	// are kept around a marker stating the bytes omitted.
	RunDefaultOutputBytes = 30_000
	// RunHardOutputBytes is the largest configurable output bound.
	RunHardOutputBytes = 4 * MiB
	// RunMinOutputBytes is the smallest: room for a head, a tail and the
	// marker between them.
	RunMinOutputBytes = 256
	// RunResultFrameBytes is room, beside the two streams RunDefaultOutputBytes
	// (or [run] max_output_bytes) keeps, for the rest of a contained
	// tool's result: its status line, notes and structured content. A
	// tool's output bound is the default one unless the streams need more.
	RunResultFrameBytes = 16 * KiB
	// RunDefaultTimeout is a command's wall clock when neither the call
	// nor the configuration gives one.
	RunDefaultTimeout = 2 * time.Minute
	// RunHardTimeout bounds any command's wall clock (the kernel's hard
	// limit on a tool call).
	RunHardTimeout = HardMaxTimeout
	// RunMaxCommandBytes bounds run_shell's command text.
	RunMaxCommandBytes = 64 * KiB
	// RunDefaultConcurrent bounds the calls of each contained tool
	// running at once, over every session ([tool.NAME] max_concurrent
	// raises it): each holds a container, its processes and its /tmp.
	RunDefaultConcurrent = 4
	// RunMaxStdinBytes bounds the standard input a call may give.
	RunMaxStdinBytes = 1 * MiB
	// RunMaxArgs and RunMaxArgBytes bound the extra arguments a model may
	// pass to a declared command.
	RunMaxArgs     = 64
	RunMaxArgBytes = 4 * KiB
	// RunMaxSpecBytes bounds the description of a run handed to the
	// sandbox helper.
	RunMaxSpecBytes = 1 * MiB
	// RunMaxHelperErrorBytes bounds what is kept of a helper's report of a
	// failed setup.
	RunMaxHelperErrorBytes = 4 * KiB
	// RunMaxLandlockRules bounds the filesystem rules of one run (in
	// reduced containment, the entries of a directory closed to keep a
	// protected path in it read-only count one each).
	RunMaxLandlockRules = 4_096
	// RunMaxQuarantineBytes and RunMaxQuarantineEntries bound what is
	// kept of an entry a command left at a protected name when the
	// quarantine is on another filesystem than its root (it is copied,
	// then removed from the root whole).
	RunMaxQuarantineBytes   = 256 * MiB
	RunMaxQuarantineEntries = 65_536
	// RunTreeDepth bounds the directories held open at once while a tree
	// a command left is removed (a deeper one is moved up its own tree
	// first) or its size measured (deeper entries are not counted).
	RunTreeDepth = 256
	// RunScratchCheckEvery is how often, at least, the private tmp of a
	// command in reduced containment is measured against its bound (less
	// often when measuring it takes long: at most a twentieth of the
	// time).
	RunScratchCheckEvery = 200 * time.Millisecond
	// RunAuditNotesKept bounds the distinct containment notes a runner
	// remembers having said in the audit log (each is said once).
	RunAuditNotesKept = 256
	// RunKillGrace is how long the runner waits for output pipes to close
	// after the command's processes were killed.
	RunKillGrace = 2 * time.Second
)

// Resource limits inside the container: the defaults, and what no
// configuration may exceed.
const (
	RunDefaultMemoryBytes = 8 * GiB // address space of each process
	RunHardMemoryBytes    = 64 * GiB
	RunDefaultProcesses   = 1_024 // processes and threads in the call
	RunHardProcesses      = 32_768
	RunDefaultFileBytes   = 1 * GiB // largest file a command may write
	RunHardFileBytes      = 64 * GiB
	RunDefaultOpenFiles   = 1_024
	RunHardOpenFiles      = 65_536
	RunDefaultTmpBytes    = 512 * MiB // the private /tmp
	RunHardTmpBytes       = 16 * GiB
	// RunHardMilliCPUs bounds a run's CPU bandwidth (cgroup cpu.max) in
	// thousandths of a CPU; the default is every CPU of the machine.
	RunHardMilliCPUs = 1_024_000
	// RunMinMilliCPUs is the least configurable bandwidth (the kernel's
	// least cpu.max quota is 1 ms per 100 ms period).
	RunMinMilliCPUs = 10
	// RunMinProcesses is the least a namespace's PID limit may be set to
	// (the kernel refuses less).
	RunMinProcesses = 301
	// RunSkeletonBytes bounds the tmpfs holding the container's root
	// directory skeleton (mount points and a few /etc files).
	RunSkeletonBytes = 1 * MiB
	// RunTmpInodes bounds the files of the private /tmp.
	RunTmpInodes = 65_536
)

// The persistent tool caches of contained commands ([run] cache): one
// directory per set of roots, under one base for the capkit user.
const (
	// RunDefaultCacheBytes bounds the disk space of the base, every
	// root's caches together ([run] cache_bytes). It is measured after a
	// run, at most once every RunCacheTrimInterval; past it, whole
	// roots' caches are removed, the least recently used first, until
	// the rest fits. A single run may write past it before it is
	// measured (the disk and file_bytes bound that).
	RunDefaultCacheBytes = 20 * GiB
	RunHardCacheBytes    = 16 * 1024 * GiB
	RunMinCacheBytes     = 256 * MiB
	// RunCacheTrimInterval is the least time between two measures of the
	// caches, over every process of the capkit user (a stamp file in the
	// base): each walks every cache, at most limits.TreeHardEntries
	// entries (more count as past the bound).
	RunCacheTrimInterval = 10 * time.Minute
)
