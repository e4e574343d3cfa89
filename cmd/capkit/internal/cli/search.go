package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/fileio"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/lexindex"
	"github.com/capkit/capkit/search/passages"
)

func newPassagesCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "passages",
		Short: "Find exact passages in one text file",
	}
	cmd.AddCommand(newPassagesFindCmd(env))
	return cmd
}

func newPassagesFindCmd(env *Env) *cobra.Command {
	var (
		query, regionsFile string
		ignoreCase         bool
		limit              int
	)
	cmd := &cobra.Command{
		Use:   "find SOURCE --query Q",
		Short: fmt.Sprintf("Every exact occurrence of Q in the UTF-8 file SOURCE (at most %d bytes)", limits.PassagesMaxSourceBytes),
		Long: fmt.Sprintf(`Find every occurrence of the literal Q in SOURCE, exactly as written (no
normalisation), or with Unicode simple case folding under --ignore-case.
Offsets are characters (code points), [start, end). --regions names a JSON
file holding non-overlapping ranges [{"start": 0, "end": 3120}, ...] (pages,
say): only matches inside one region count, each names its region, and its
context (up to %d characters a side) stops at the region's edge. At most
%d matches are printed (--limit, default %d); the total counts them all.`,
			limits.PassagesContextRunes, limits.PassagesMaxMatches, limits.PassagesDefaultMatches),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := absPath(args[0])
			if err != nil {
				return err
			}
			o := &passages.Options{IgnoreCase: ignoreCase, Limit: limit}
			if regionsFile != "" {
				if o.Regions, err = readRegions(cmd, regionsFile); err != nil {
					return err
				}
			}
			r, err := passages.FindFile(cmd.Context(), src, query, o)
			if err != nil {
				return err
			}
			return env.Print(r, r.ToolText())
		},
	}
	cmd.Flags().StringVar(&query, "query", "", "the literal text to find")
	cmd.Flags().StringVar(&regionsFile, "regions", "", "JSON file of non-overlapping character ranges to search")
	cmd.Flags().BoolVar(&ignoreCase, "ignore-case", false, "match with Unicode simple case folding")
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("matches to print, at most %d", limits.PassagesMaxMatches))
	return cmd
}

func readRegions(cmd *cobra.Command, name string) ([]passages.Region, error) {
	p, err := absPath(name)
	if err != nil {
		return nil, err
	}
	data, err := fileio.ReadFile(cmd.Context(), p, limits.PassagesMaxRegionsBytes)
	if err != nil {
		return nil, err
	}
	var regions []passages.Region
	if err := json.Unmarshal(data, &regions); err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, `regions file: want a JSON array of {"start": N, "end": N}`)
	}
	return regions, nil
}

func newLexindexCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lexindex",
		Short: "A full-text index (SQLite FTS5, BM25) in a database file you name",
	}
	cmd.AddCommand(newLexAddCmd(env), newLexRemoveCmd(env), newLexStatusCmd(env), newLexScopeCmd(env), newLexSearchCmd(env))
	return cmd
}

// openLex opens the index at the database path db.
func openLex(cmd *cobra.Command, db string, create bool) (*lexindex.Index, error) {
	p, err := absPath(db)
	if err != nil {
		return nil, err
	}
	return lexindex.Open(cmd.Context(), p, &lexindex.Options{Create: create})
}

func printApplied(env *Env, a lexindex.Applied) error { return env.Print(a, a.ToolText()) }

func newLexAddCmd(env *Env) *cobra.Command {
	var digest, expect string
	cmd := &cobra.Command{
		Use:   "add DB REF FILE",
		Short: fmt.Sprintf("Add or replace the document REF with the UTF-8 text of FILE (at most %d bytes)", limits.LexMaxDocumentBytes),
		Long: `Store FILE's text under REF in the index DB (created if missing), with
--digest (default: the text's hex SHA-256). With --expect-digest, the index
must hold REF at that digest now, or nothing changes and the exit code is 4
(conflict).`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := absPath(args[2])
			if err != nil {
				return err
			}
			text, err := fileio.ReadFile(cmd.Context(), p, limits.LexMaxDocumentBytes)
			if err != nil {
				return err
			}
			ix, err := openLex(cmd, args[0], true)
			if err != nil {
				return err
			}
			defer ix.Close()
			a, err := ix.Apply(cmd.Context(), []lexindex.Mutation{{Ref: args[1], Text: string(text), Digest: digest, Expect: expect}})
			if err != nil {
				return err
			}
			return printApplied(env, a)
		},
	}
	cmd.Flags().StringVar(&digest, "digest", "", "the digest to store with the document (default: its hex SHA-256)")
	cmd.Flags().StringVar(&expect, "expect-digest", "", "fail with conflict unless the index holds REF at this digest")
	return cmd
}

func newLexRemoveCmd(env *Env) *cobra.Command {
	var expect string
	cmd := &cobra.Command{
		Use:   "remove DB REF",
		Short: "Remove the document REF from the index DB",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ix, err := openLex(cmd, args[0], false)
			if err != nil {
				return err
			}
			defer ix.Close()
			a, err := ix.Apply(cmd.Context(), []lexindex.Mutation{{Ref: args[1], Remove: true, Expect: expect}})
			if err != nil {
				return err
			}
			return printApplied(env, a)
		},
	}
	cmd.Flags().StringVar(&expect, "expect-digest", "", "fail with conflict unless the index holds REF at this digest")
	return cmd
}

func newLexStatusCmd(env *Env) *cobra.Command {
	var current []string
	var after string
	cmd := &cobra.Command{
		Use:   "status DB [REF...]",
		Short: "Whether each REF is indexed and at which digest (all refs without REF)",
		Long: fmt.Sprintf(`Report each REF: indexed or not, its digest, and with --current REF=DIGEST
whether the indexed copy is stale. Without REF, list the indexed refs, at most
%d, continuing after --after.`, limits.LexMaxStatusRefs),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := lexindex.StatusRequest{After: after}
			cur := map[string]string{}
			for _, c := range current {
				i := strings.LastIndexByte(c, '=')
				if i <= 0 {
					return fault.New(fault.InvalidInput, "--current %q: give REF=DIGEST", c)
				}
				cur[c[:i]] = c[i+1:]
			}
			for _, r := range args[1:] {
				req.Refs = append(req.Refs, lexindex.RefDigest{Ref: r, Current: cur[r]})
			}
			ix, err := openLex(cmd, args[0], false)
			if err != nil {
				return err
			}
			defer ix.Close()
			st, err := ix.Status(cmd.Context(), req)
			if err != nil {
				return err
			}
			return env.Print(st, st.ToolText())
		},
	}
	cmd.Flags().StringArrayVar(&current, "current", nil, "REF=DIGEST: the current digest of REF, to tell whether it is stale")
	cmd.Flags().StringVar(&after, "after", "", "when listing, continue after this ref")
	return cmd
}

func newLexScopeCmd(env *Env) *cobra.Command {
	var remove bool
	cmd := &cobra.Command{
		Use:   "scope DB NAME [REF...]",
		Short: "Make the scope NAME hold exactly the refs REF... (or remove it with --remove)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ix, err := openLex(cmd, args[0], !remove)
			if err != nil {
				return err
			}
			defer ix.Close()
			r := lexindex.ScopeResult{Name: args[1], Refs: len(args) - 2, Removed: remove}
			if remove {
				if len(args) > 2 {
					return fault.New(fault.InvalidInput, "--remove takes no refs")
				}
				err = ix.RemoveScope(cmd.Context(), args[1])
			} else {
				err = ix.SetScope(cmd.Context(), args[1], args[2:])
			}
			if err != nil {
				return err
			}
			return env.Print(r, r.ToolText())
		},
	}
	cmd.Flags().BoolVar(&remove, "remove", false, "delete the scope")
	return cmd
}

func newLexSearchCmd(env *Env) *cobra.Command {
	var (
		phrase, fts, snippets bool
		scope                 string
		limit                 int
	)
	cmd := &cobra.Command{
		Use:   "search DB QUERY",
		Short: "Ranked full-text search (BM25) of the index DB",
		Long: fmt.Sprintf(`Rank the documents of DB for QUERY by BM25 over the whole index, best first,
at most %d (--limit, default %d). QUERY is terms, all required; --phrase makes
it one phrase; --fts takes SQLite FTS5 query syntax, and a malformed query
exits with 2 (invalid_input) naming the character where it goes wrong.
--scope ranks only that stored scope's documents.`, limits.LexMaxHits, limits.LexDefaultHits),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := lexindex.Query{Text: args[1], Mode: lexindex.Terms, Scope: scope, Limit: limit, Snippets: snippets}
			switch {
			case phrase && fts:
				return fault.New(fault.InvalidInput, "give --phrase or --fts, not both")
			case phrase:
				q.Mode = lexindex.Phrase
			case fts:
				q.Mode = lexindex.FTS
			}
			ix, err := openLex(cmd, args[0], false)
			if err != nil {
				return err
			}
			defer ix.Close()
			r, err := ix.Search(cmd.Context(), q)
			if err != nil {
				return err
			}
			return env.Print(r, r.ToolText())
		},
	}
	cmd.Flags().BoolVar(&phrase, "phrase", false, "QUERY is one phrase")
	cmd.Flags().BoolVar(&fts, "fts", false, "QUERY is an FTS5 query")
	cmd.Flags().BoolVar(&snippets, "snippets", false, "print an excerpt of each hit")
	cmd.Flags().StringVar(&scope, "scope", "", "rank only the documents of this stored scope")
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("hits to print, at most %d", limits.LexMaxHits))
	return cmd
}
