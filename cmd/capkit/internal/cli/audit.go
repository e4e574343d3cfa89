package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/audit/trail"
	"github.com/capkit/capkit/fault"
)

func newAuditCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Verify the hash-chained audit trail",
		Long: `The audit trail (audit_log) is a file of records, one a line, each carrying
the SHA-256 of the record before it, so a line that was changed, removed or
reordered breaks the chain where it happened. A rotated trail file begins
where the one before it ended.`,
	}
	cmd.AddCommand(newAuditVerifyCmd(env))
	return cmd
}

func newAuditVerifyCmd(env *Env) *cobra.Command {
	var after string
	cmd := &cobra.Command{
		Use:   "verify FILE...",
		Short: "Verify trail files as one chain; name the first line changed, removed or reordered (exit 9)",
		Long: `verify checks every record of the trail files given, in order (rotated files
first: audit.jsonl.20261201T000000.000000000Z before audit.jsonl), as one
chain, and prints the number of records and the last one's number and hash.
Keep that head somewhere the trail's writer cannot change: the chain shows
lines changed, removed or reordered anywhere but at the end, and the head
shows lines cut from the end.

A trail must start at its first record, unless --after SEQ:HASH gives the
record it continues (the head of a rotated file that is not given). A
broken chain fails with integrity (exit 9), naming the file, the line and
what happened there: changed (the line is not what its hash binds, or the
next line chains to another hash), removed (records missing before it),
reordered (its record belongs elsewhere or appears twice) or incomplete
(the file ends mid-line).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, head, err := parseAfter(after)
			if err != nil {
				return err
			}
			rep, err := trail.Verify(cmd.Context(), args, seq, head)
			if err != nil {
				return err
			}
			var b strings.Builder
			for _, f := range rep.Files {
				if f.Records == 0 {
					fmt.Fprintf(&b, "%s: no records\n", f.Path)
					continue
				}
				fmt.Fprintf(&b, "%s: records %d to %d\n", f.Path, f.First, f.Last)
			}
			fmt.Fprintf(&b, "ok: %d records, last %d, head %s", rep.Records, rep.Seq, rep.Head)
			return env.Print(rep, b.String())
		},
	}
	cmd.Flags().StringVar(&after, "after", "", "SEQ:HASH: the record the first file continues (the last of a rotated file not given)")
	return cmd
}

// parseAfter reads --after SEQ:HASH.
func parseAfter(s string) (uint64, string, error) {
	if s == "" {
		return 0, "", nil
	}
	num, hash, ok := strings.Cut(s, ":")
	seq, err := strconv.ParseUint(num, 10, 64)
	if !ok || err != nil || seq == 0 || len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
		return 0, "", fault.New(fault.InvalidInput, "--after %q: want SEQ:HASH, the record's number and its 64 hex digits", s)
	}
	return seq, hash, nil
}
