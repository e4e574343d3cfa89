package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/parse/htmldoc"
)

func newHTMLCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "html",
		Short: "Read HTML pages as structured text",
	}
	cmd.AddCommand(newHTMLExtractCmd(env))
	return cmd
}

func newHTMLExtractCmd(env *Env) *cobra.Command {
	var article, allowScreen bool
	var baseURL, contentType string
	cmd := &cobra.Command{
		Use:   "extract FILE",
		Short: "Print an HTML page's text (or, with --article, its main article)",
		Long: fmt.Sprintf(`Print the title, headings, paragraphs, list items, quotes, preformatted
blocks and table rows of an HTML page, then its links (resolved against
--base-url when given). With --article, only the main article: it is
identified (element, size, link density) and must be prose, else exit 2.

Login walls, cookie/consent walls, bot challenges, paywalls and error pages
are refused with exit 9 (integrity): the bytes are not the document;
--allow-access-screen prints such a page anyway, with an access_screen
warning. Limits
(exit 6): %s, %d nodes, depth %d, %d attributes per element. FILE "-"
reads standard input; --json prints the whole document as JSON.`,
			limits.Bytes(limits.HTMLMaxBytes), limits.HTMLMaxNodes, limits.HTMLMaxDepth, limits.HTMLMaxAttributes),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readDocArg(env, args[0], limits.HTMLMaxBytes)
			if err != nil {
				return err
			}
			sel := htmldoc.SelectText
			if article {
				sel = htmldoc.SelectArticle
			}
			doc, err := htmldoc.Parse(cmd.Context(), data, sel, &htmldoc.Options{BaseURL: baseURL, ContentType: contentType, DisableAccessScreenRefusal: allowScreen})
			if err != nil {
				return err
			}
			var text strings.Builder
			if err := doc.WriteText(&text); err != nil {
				return err
			}
			return env.Print(doc, text.String())
		},
	}
	cmd.Flags().BoolVar(&article, "article", false, "print only the main article, checked to be prose")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "absolute http(s) URL the page came from, to resolve links")
	cmd.Flags().BoolVar(&allowScreen, "allow-access-screen", false, "print a page taken for an access screen, with a warning, instead of exit 9")
	cmd.Flags().StringVar(&contentType, "content-type", "", "the Content-Type the page was served with (its charset decides the encoding)")
	return cmd
}
