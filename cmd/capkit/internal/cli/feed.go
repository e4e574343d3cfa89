package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/parse/feed"
)

func newFeedCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "feed",
		Short: "Read RSS and Atom feeds",
	}
	cmd.AddCommand(newFeedParseCmd(env))
	return cmd
}

func newFeedParseCmd(env *Env) *cobra.Command {
	var source string
	var limit int
	cmd := &cobra.Command{
		Use:   "parse FILE [--url URL]",
		Short: "Print a feed's entries, with omitted entries, duplicates and date problems reported",
		Long: fmt.Sprintf(`Read an RSS 0.90/0.91/0.92/2.0, RSS 1.0 (RDF) or Atom 1.0 feed and print its
first --limit entries (default and maximum %d): title, link (resolved against
--url, if given, and xml:base; without either a relative link is left out,
with a warning), dates (original text and UTC), authors and summary.
Entries past the limit are still checked and counted as omitted; entries
sharing an id or link are reported as duplicates or conflicts; a date that
names no instant is reported, never replaced.

DTDs are refused (only the RSS 0.91 DOCTYPE is accepted, never read): exit 2.
Limits (exit 6): %s, %d nodes, depth %d. FILE "-" reads standard input;
--json prints the whole feed as JSON.`,
			limits.FeedMaxEntries, limits.Bytes(limits.FeedMaxBytes), limits.FeedMaxNodes, limits.FeedMaxDepth),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readDocArg(env, args[0], limits.FeedMaxBytes)
			if err != nil {
				return err
			}
			f, err := feed.Parse(cmd.Context(), data, source, limit)
			if err != nil {
				return err
			}
			var text strings.Builder
			if err := f.WriteText(&text); err != nil {
				return err
			}
			return env.Print(f, text.String())
		},
	}
	cmd.Flags().StringVar(&source, "url", "", "absolute http(s) URL the feed came from, to resolve relative links against")
	cmd.Flags().IntVar(&limit, "limit", limits.FeedMaxEntries, fmt.Sprintf("entries to print, 1 to %d", limits.FeedMaxEntries))
	return cmd
}
