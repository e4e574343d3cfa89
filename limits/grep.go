package limits

// grep and glob (files/tools).
const (
	// GrepMaxHeadLimit bounds grep's head_limit: the entries one page
	// shows (matching lines, files or counts); GrepMaxMatches is the
	// default. The call's output bound may stop a page earlier, and the
	// result then says where the next page starts.
	GrepMaxHeadLimit = 5_000
	// GrepMaxOffset bounds grep's and glob's offset.
	GrepMaxOffset = WalkMaxFiles * 10
	// GrepMaxContextLines bounds the context lines shown before and after
	// each match (-A, -B, -C).
	GrepMaxContextLines = 100
	// GrepChunkBytes is the read buffer of one grep worker: files are
	// streamed through it, so a file of any size is searched in bounded
	// memory. A line longer than this is searched in pieces of this size,
	// and the result says how many such lines there were.
	GrepChunkBytes = 1 * MiB
	// GrepMultilineMaxFileBytes bounds a file searched with multiline,
	// which needs the whole file at once; larger ones are skipped and
	// counted.
	GrepMultilineMaxFileBytes = GrepMaxFileBytes
	// GrepMaxWorkers bounds the files searched at once.
	GrepMaxWorkers = 8
	// GitignoreMaxRules bounds the ignore rules in force at once (those
	// of the directories above the entry being searched). A .gitignore
	// whose rules would pass the bound is not honoured, and grep says so.
	GitignoreMaxRules = 4_096
	// GitignoreMaxRuleBytes bounds one ignore rule; a longer rule is not
	// honoured, and grep says so.
	GitignoreMaxRuleBytes = PathMaxBytes

	// GlobMaxLimit bounds glob's limit; GlobMaxResults is the default.
	GlobMaxLimit = GlobMaxResults
)

// GrepKeepBytes bounds the output text one grep worker keeps of a batch
// of files (GrepBatchFiles) while the files before it are still being
// searched; entries past it are found again by a second search when the
// page reaches them.
const GrepKeepBytes = 256 * KiB

// GrepBatchFiles is how many files, consecutive in one directory, grep
// hands to one worker at a time.
const GrepBatchFiles = 32

// GrepTasksPerWorker bounds the tasks (directories to list, batches of
// files) grep's workers take and its collector has not yet taken in walk
// order, per worker, so the results kept (at most GrepKeepBytes a batch)
// and the directories held open stay bounded; tasks before the latest
// taken have as many again.
const GrepTasksPerWorker = 16

// The lazy DFA that finds grep's matching lines (internal/linedfa).
const (
	// GrepDFACacheBytes bounds the states one grep worker keeps built; a
	// full cache is emptied and built again, and a search that would
	// empty it too often goes on with Go's regexp.
	GrepDFACacheBytes = 2 * MiB
	// GrepDFAMaxNFANodes bounds the byte automaton of a pattern (the
	// program's instructions, the UTF-8 tries of its classes and their
	// edges); a larger pattern is matched with Go's regexp.
	GrepDFAMaxNFANodes = 20_000
)
