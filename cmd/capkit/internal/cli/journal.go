package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/journal"
)

func newJournalCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "Append JSON events to hash-chained journals and verify them",
		Long: fmt.Sprintf(`A journal is an append-only file of JSON events (ROOT/NAME.jsonl) in which
every record carries the hash of its content and of the record before it, so
edits, deletions and reordering are detected by "verify" (exit 9, naming the
record, line and byte offset). ROOT must be a private directory (mode 0700);
append creates it so when it is missing.
Events are at most %s in canonical form; a journal at most %s.`,
			limits.Bytes(limits.JournalMaxEventBytes), limits.Bytes(limits.JournalMaxJournalBytes)),
	}
	cmd.AddCommand(newJournalAppendCmd(env), newJournalVerifyCmd(env), newJournalReadCmd(env), newJournalRepairCmd(env))
	return cmd
}

func openJournal(root, name string, o *journal.Options) (*journal.Journal, error) {
	dir, err := absPath(root)
	if err != nil {
		return nil, err
	}
	return journal.Open(dir, name, o)
}

// makeJournalRoot creates root, private (mode 0700), when it is missing;
// its parent must exist. An existing directory is left as it is (Open
// refuses one that is not private).
func makeJournalRoot(root string) error {
	dir, err := absPath(root)
	if err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return scope.Fault(err, "journal root "+root)
	}
	return nil
}

func newJournalAppendCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "append ROOT NAME",
		Short: "Append one JSON event, read from standard input, durably",
		Long: `Append the JSON value on standard input as the next record of journal NAME in
ROOT (the journal and, when missing, ROOT itself with mode 0700 are created
by the first append; ROOT's parent must exist) and print its number and hash once it is
on disk. Duplicate keys, non-finite numbers and numbers more precise than a
float64 are refused (exit 2).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			event, err := io.ReadAll(io.LimitReader(env.Stdin, limits.JournalMaxInputBytes+1))
			if err != nil {
				return fault.Wrap(fault.IO, err, "reading standard input failed")
			}
			if len(event) > limits.JournalMaxInputBytes {
				return fault.LimitExceeded("event bytes on standard input", limits.JournalMaxInputBytes, int64(len(event)))
			}
			if err := makeJournalRoot(args[0]); err != nil {
				return err
			}
			j, err := openJournal(args[0], args[1], nil)
			if err != nil {
				return err
			}
			defer j.Close()
			r, err := j.Append(cmd.Context(), bytes.TrimSpace(event))
			if err != nil {
				return err
			}
			return env.Print(struct {
				Seq  uint64 `json:"seq"`
				Hash string `json:"hash"`
			}{r.Seq, r.Hash}, fmt.Sprintf("%d %s", r.Seq, r.Hash))
		},
	}
}

func newJournalVerifyCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "verify ROOT NAME",
		Short: "Verify every record; report the first bad one",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			update, end := env.progress("verify")
			j, err := openJournal(args[0], args[1], &journal.Options{Progress: update})
			if err != nil {
				end()
				return err
			}
			defer j.Close()
			rep, err := j.Verify(cmd.Context())
			end()
			if err != nil {
				return err
			}
			return env.Print(rep, fmt.Sprintf("ok: %d records, %d bytes, head %s", rep.Records, rep.Bytes, rep.Head))
		},
	}
}

func newJournalReadCmd(env *Env) *cobra.Command {
	var from uint64
	var limit int
	cmd := &cobra.Command{
		Use:   "read ROOT NAME",
		Short: "Print verified records, one JSON line each",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			j, err := openJournal(args[0], args[1], nil)
			if err != nil {
				return err
			}
			defer j.Close()
			recs, _, err := j.Read(cmd.Context(), from, limit)
			if err != nil {
				return err
			}
			var b bytes.Buffer
			for _, r := range recs {
				fmt.Fprintf(&b, `{"seq":%d,"hash":"%s","event":%s}`+"\n", r.Seq, r.Hash, r.Event)
			}
			if recs == nil {
				recs = []journal.Record{}
			}
			return env.Print(recs, b.String())
		},
	}
	cmd.Flags().Uint64Var(&from, "from", 1, "first record number")
	cmd.Flags().IntVar(&limit, "limit", 1000, "most records to print")
	return cmd
}

func newJournalRepairCmd(env *Env) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "repair ROOT NAME --yes",
		Short: "Remove an incomplete last record (left by a crash mid-append)",
		Long: `Truncate an incomplete last record, as a crash mid-append can leave, and
nothing else. A journal whose complete records fail verification is refused
(exit 9) and left unchanged; restore it from a copy instead. Requires --yes.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				return fault.New(fault.InvalidInput, "repair removes the incomplete last record of the journal; run verify first, then pass --yes")
			}
			j, err := openJournal(args[0], args[1], nil)
			if err != nil {
				return err
			}
			defer j.Close()
			res, err := j.Repair(cmd.Context())
			if err != nil {
				return err
			}
			text := fmt.Sprintf("nothing to repair: %d records", res.Records)
			if res.Removed > 0 {
				text = fmt.Sprintf("removed an incomplete record of %d bytes; %d records remain", res.Removed, res.Records)
			}
			return env.Print(res, text)
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the repair")
	return cmd
}
