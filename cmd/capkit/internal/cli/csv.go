package cli

import (
	"encoding/csv"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/parse/tabular"
)

func newCSVCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "csv",
		Short: "Scan delimited tables (CSV, TSV, pipe; plain, zipped or gzipped)",
	}
	cmd.AddCommand(newCSVScanCmd(env))
	return cmd
}

// csvScan holds csv scan's flags.
type csvScan struct {
	columns              string
	where                []string
	maxRows, offset, max int64
	dialect, format      string
	rowsOnly             bool
}

func newCSVScanCmd(env *Env) *cobra.Command {
	var c csvScan
	cmd := &cobra.Command{
		Use:   "scan FILE",
		Short: "Print the rows of a table, optionally only some columns and matching rows",
		Long: fmt.Sprintf(`Scan FILE ("-" for standard input): a CSV, a ZIP holding exactly one CSV, or a
GZIP'd CSV, in the comma, pipe or tab dialect (detected unless --dialect is
given). The first row is the header. Matched rows are printed as CSV (comma
dialect) with a header of the returned columns; the counts (rows scanned,
matched, skipped, returned) and any truncation by --max-rows follow after a
blank line (--rows-only leaves them out). --json prints the counts and rows
as one JSON object.

--where COLUMN=VALUE keeps rows whose field equals VALUE exactly; != means
differs, *= means contains; repeat it to require several conditions.

Limits: compressed input %s, CSV text %s (expanded), %d columns,
%s per record, %d data rows unless --max-scan-rows raises it (at most
%d). Over a limit: exit 6. Ragged rows, bad quoting, invalid UTF-8: exit 2.`,
			limits.Bytes(limits.TabularMaxCompressedBytes), limits.Bytes(limits.TabularMaxExpandedBytes), limits.TabularMaxColumns,
			limits.Bytes(limits.TabularMaxRecordBytes), limits.TabularDefaultRows, limits.TabularHardRows),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.run(cmd, env, args[0])
		},
	}
	c.flags(cmd)
	return cmd
}

func (c *csvScan) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.columns, "columns", "", "comma-separated header names of the columns to print, in order")
	f.StringArrayVar(&c.where, "where", nil, "keep rows where COLUMN=VALUE (!= differs, *= contains); repeatable")
	f.Int64Var(&c.maxRows, "max-rows", 0, "print at most N matched rows; the rest are counted and reported as truncated")
	f.Int64Var(&c.offset, "offset", 0, "skip N matched rows first (to continue after a truncated scan)")
	f.Int64Var(&c.max, "max-scan-rows", 0, fmt.Sprintf("data rows to read before failing with limit (default %d)", limits.TabularDefaultRows))
	f.StringVar(&c.dialect, "dialect", "", "comma, pipe or tab (default: detected)")
	f.StringVar(&c.format, "format", "", "csv, gzip or zip (default: detected from the signature)")
	f.BoolVar(&c.rowsOnly, "rows-only", false, "print the rows alone, without the summary after them (for piping the CSV on)")
}

// options turns the flags into the scan's options.
func (c *csvScan) options() (*tabular.Options, error) {
	opts := &tabular.Options{MaxRows: c.maxRows, Offset: c.offset, MaxScanRows: c.max}
	var err error
	if opts.Dialect, err = tabular.ParseDialect(c.dialect); err != nil {
		return nil, err
	}
	if opts.Format, err = tabular.ParseFormat(c.format); err != nil {
		return nil, err
	}
	if c.columns != "" {
		opts.Columns = strings.Split(c.columns, ",")
	}
	for _, w := range c.where {
		cond, err := tabular.ParseCondition(w)
		if err != nil {
			return nil, err
		}
		opts.Filter = append(opts.Filter, cond)
	}
	return opts, nil
}

func (c *csvScan) run(cmd *cobra.Command, env *Env, file string) error {
	opts, err := c.options()
	if err != nil {
		return err
	}
	data, err := readDocArg(env, file, limits.TabularMaxExpandedBytes)
	if err != nil {
		return err
	}
	res, err := tabular.Scan(cmd.Context(), data, opts)
	if err != nil {
		return err
	}
	if env.JSON {
		return env.Print(res, "")
	}
	w := csv.NewWriter(env.Stdout)
	w.Write(res.Columns)
	w.WriteAll(res.Rows)
	if err := w.Error(); err != nil {
		return fault.Wrap(fault.IO, err, "writing the rows failed")
	}
	if !c.rowsOnly {
		// The summary is part of the result: standard output, after a
		// blank line (standard error is for failures).
		fmt.Fprintf(env.Stdout, "\n%s\n", summaryText(&res.Summary))
	}
	return nil
}

// summaryText states the counts and any truncation.
func summaryText(s *tabular.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s), %d columns: rows scanned %d, matched %d, skipped %d, returned %d", s.Format, s.Dialect, len(s.Header), s.Scanned, s.Matched, s.Skipped, s.Returned)
	if s.BOM {
		b.WriteString("; byte order mark removed")
	}
	if s.Truncated {
		fmt.Fprintf(&b, "; TRUNCATED by --max-rows: %d matched rows not printed, the next is data row %d (line %d); pass --offset %d to continue",
			s.Matched-s.Skipped-s.Returned, s.Next.Row, s.Next.Line, s.Next.Offset)
	}
	return b.String()
}
