package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/parse/sniff"
)

func newSniffCmd(env *Env) *cobra.Command {
	var expect, mediaType string
	cmd := &cobra.Command{
		Use:   "sniff FILE --expect json|feed|html|pdf|csv",
		Short: "Check a response body is the expected format and not an access screen",
		Long: fmt.Sprintf(`Classify a saved response body (json, rss, atom, rdf, html, pdf, text, gzip,
zip, binary) against the format you expect and the media type it was served
with (--media-type), and print warnings. A wrong-format body (HTML where JSON
or a feed was expected), an empty body, and access screens (login walls,
cookie/consent walls, bot challenges, paywalls, error pages served with
status 200) are refused with exit 9 (integrity).

PDF is recognised by its %%PDF- signature only: it is not parsed, no text is
extracted and no OCR is done. JSON, feeds and CSV are classified here, not
validated: use capkit json, feed and csv for that. At most %s (exit 6).
FILE "-" reads standard input; --json prints the report as JSON.`, limits.Bytes(limits.SniffMaxBytes)),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := sniff.ParseFormat(expect)
			if err != nil {
				return err
			}
			data, err := readDocArg(env, args[0], limits.SniffMaxBytes)
			if err != nil {
				return err
			}
			r, err := sniff.Check(cmd.Context(), data, format, mediaType)
			if err != nil {
				return err
			}
			var text strings.Builder
			fmt.Fprintf(&text, "ok: %s, as expected for %s", r.Detected, r.Expected)
			if r.MediaType != "" {
				fmt.Fprintf(&text, " (declared %s)", r.MediaType)
			}
			for _, w := range r.Warnings {
				fmt.Fprintf(&text, "\nwarning (%s): %s", w.Code, w.Message)
			}
			return env.Print(r, text.String())
		},
	}
	cmd.Flags().StringVar(&expect, "expect", "", "the expected format: json, feed, html, pdf or csv (required)")
	cmd.Flags().StringVar(&mediaType, "media-type", "", "the Content-Type the body was served with")
	cmd.MarkFlagRequired("expect")
	return cmd
}
