package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/semindex"
	"github.com/capkit/capkit/search/semindex/bert"
)

// modelFlags are --model and --pin.
type modelFlags struct {
	dir, pin string
}

func (f *modelFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "model", "", "model directory: config.json, tokenizer.json, model.safetensors (required)")
	cmd.Flags().StringVar(&f.pin, "pin", "", "SHA-256 model.safetensors must have (default: the published "+bert.PublishedName+" digest)")
}

func (f *modelFlags) load(cmd *cobra.Command) (*bert.Model, error) {
	if f.dir == "" {
		return nil, fault.New(fault.InvalidInput, "--model DIR is required; %s", bert.HowToGet(f.pin))
	}
	dir, err := absPath(f.dir)
	if err != nil {
		return nil, err
	}
	return bert.Load(cmd.Context(), dir, &bert.Options{Pin: f.pin})
}

func openSemIndex(cmd *cobra.Command, path string, create bool) (*semindex.Index, error) {
	p, err := absPath(path)
	if err != nil {
		return nil, err
	}
	return semindex.Open(cmd.Context(), p, &semindex.OpenOptions{NoCreate: !create})
}

func newSemindexCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "semindex",
		Short: "Index sources by meaning in a SQLite database you name, and search it",
		Long: fmt.Sprintf(`A semantic index is a SQLite database holding sources under your references
(REF), cut into chunks of whole words of at most %d word pieces (the model's
window of %d with [CLS] and [SEP]), each embedded with a pinned BERT model
(%s as published, unless --pin names another). A search scores every chunk
in scope by exact cosine similarity inside SQLite: no candidate list, no
ceiling. Sources are at most %d bytes of UTF-8.

The model is not downloaded: put config.json, tokenizer.json and
model.safetensors in a directory and pass it with --model. A missing model
exits 7 (unavailable), a model.safetensors whose SHA-256 is not the pinned one
exits 9 (integrity).`, limits.SemChunkPieces, limits.SemWindow, bert.PublishedName, limits.SemSourceMaxBytes),
	}
	cmd.AddCommand(newSemAddCmd(env), newSemSearchCmd(env), newSemStatusCmd(env), newSemAuditCmd(env),
		newSemRemoveCmd(env), newSemScopeCmd(env))
	return cmd
}

func newSemAddCmd(env *Env) *cobra.Command {
	var mf modelFlags
	var digest, expect string
	cmd := &cobra.Command{
		Use:   "add DB REF FILE",
		Short: "Add or replace the source FILE under REF (one transaction; - reads standard input)",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readDocArg(env, args[2], limits.SemSourceMaxBytes)
			if err != nil {
				return err
			}
			m, err := mf.load(cmd)
			if err != nil {
				return err
			}
			ix, err := openSemIndex(cmd, args[0], true)
			if err != nil {
				return err
			}
			defer ix.Close()
			r, err := ix.Add(cmd.Context(), m, args[1], string(data), &semindex.AddOptions{Digest: digest, ExpectDigest: expect})
			if err != nil {
				return err
			}
			return env.Print(r, r.ToolText())
		},
	}
	mf.add(cmd)
	cmd.Flags().StringVar(&digest, "digest", "", "your current digest of the source (default: its SHA-256)")
	cmd.Flags().StringVar(&expect, "expect-digest", "", "replace only if REF is indexed at this digest now (exit 4 otherwise)")
	return cmd
}

func newSemSearchCmd(env *Env) *cobra.Command {
	var mf modelFlags
	var o semindex.SearchOptions
	cmd := &cobra.Command{
		Use:   "search DB QUERY",
		Short: "Rank every chunk in scope by exact cosine similarity to QUERY",
		Long: fmt.Sprintf(`Print the best hits as spans: score, REF and [start,end) in Unicode characters
of the source. --limit defaults to %d, at most %d; a --scope filters before the
limit. With --json: {"hits": [{"ref", "start", "end", "score"}], "scanned", ...}.`,
			limits.SemSearchDefaultHits, limits.SemSearchMaxHits),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := mf.load(cmd)
			if err != nil {
				return err
			}
			ix, err := openSemIndex(cmd, args[0], false)
			if err != nil {
				return err
			}
			defer ix.Close()
			r, err := ix.Search(cmd.Context(), m, args[1], &o)
			if err != nil {
				return err
			}
			return env.Print(r, r.ToolText())
		},
	}
	mf.add(cmd)
	cmd.Flags().StringVar(&o.Scope, "scope", "", "only hits from the refs of this scope")
	cmd.Flags().IntVar(&o.Limit, "limit", 0, fmt.Sprintf("number of hits (default %d, at most %d)", limits.SemSearchDefaultHits, limits.SemSearchMaxHits))
	cmd.Flags().BoolVar(&o.WithText, "text", false, "print each hit's chunk text")
	return cmd
}

func newSemStatusCmd(env *Env) *cobra.Command {
	var current []string
	cmd := &cobra.Command{
		Use:   "status DB [REF…]",
		Short: "Report the index from its metadata: model, counts, refs and digests (not an audit)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := &semindex.StatusOptions{Refs: args[1:], Current: map[string]string{}}
			for _, c := range current {
				ref, d, ok := strings.Cut(c, "=")
				if !ok {
					return fault.New(fault.InvalidInput, "--current %q is not REF=DIGEST", c)
				}
				o.Current[ref] = d
			}
			ix, err := openSemIndex(cmd, args[0], false)
			if err != nil {
				return err
			}
			defer ix.Close()
			s, err := ix.Status(cmd.Context(), o)
			if err != nil {
				return err
			}
			return env.Print(s, s.ToolText())
		},
	}
	cmd.Flags().StringArrayVar(&current, "current", nil, "REF=DIGEST: your current digest, to report whether REF is stale (repeatable)")
	return cmd
}

func newSemAuditCmd(env *Env) *cobra.Command {
	var mf modelFlags
	cmd := &cobra.Command{
		Use:   "audit DB",
		Short: "The full check: recompute every chunk and vector with the model and compare (exit 9 on a problem)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := mf.load(cmd)
			if err != nil {
				return err
			}
			ix, err := openSemIndex(cmd, args[0], false)
			if err != nil {
				return err
			}
			defer ix.Close()
			r, err := ix.Audit(cmd.Context(), m)
			if err != nil {
				return err
			}
			if err := env.Print(r, r.ToolText()); err != nil {
				return err
			}
			if !r.OK {
				return fault.New(fault.Integrity, "the audit found %d problems", len(r.Problems))
			}
			return nil
		},
	}
	mf.add(cmd)
	return cmd
}

func newSemRemoveCmd(env *Env) *cobra.Command {
	var expect string
	cmd := &cobra.Command{
		Use:   "remove DB REF",
		Short: "Remove REF and its chunks (exit 3 if it is not indexed)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ix, err := openSemIndex(cmd, args[0], false)
			if err != nil {
				return err
			}
			defer ix.Close()
			if err := ix.Remove(cmd.Context(), args[1], expect); err != nil {
				return err
			}
			return env.Print(map[string]any{"removed": args[1]}, "removed "+args[1])
		},
	}
	cmd.Flags().StringVar(&expect, "expect-digest", "", "remove only if REF is indexed at this digest now (exit 4 otherwise)")
	return cmd
}

func newSemScopeCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "scope DB NAME [REF…]",
		Short: "Set the named scope NAME to exactly the REFs (stored in the index)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ix, err := openSemIndex(cmd, args[0], true)
			if err != nil {
				return err
			}
			defer ix.Close()
			if err := ix.SetScope(cmd.Context(), args[1], args[2:]); err != nil {
				return err
			}
			return env.Print(map[string]any{"scope": args[1], "refs": len(args) - 2}, fmt.Sprintf("scope %s: %d refs", args[1], len(args)-2))
		},
	}
}

func newEmbedCmd(env *Env) *cobra.Command {
	var mf modelFlags
	cmd := &cobra.Command{
		Use:   "embed --model DIR TEXT…",
		Short: "Print each TEXT's normalised sentence vector, one JSON array per line",
		Long: fmt.Sprintf(`Embed each TEXT with the pinned model (mean pooling, L2 normalisation) and
print one JSON array per text. A TEXT of more than %d word pieces exits 6
(limit): nothing is cut; index long text with "semindex add".`, limits.SemChunkPieces),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := mf.load(cmd)
			if err != nil {
				return err
			}
			var b strings.Builder
			for _, text := range args {
				v, err := m.EmbedText(cmd.Context(), text)
				if err != nil {
					return err
				}
				b.WriteByte('[')
				for i, x := range v {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
				}
				b.WriteString("]\n")
			}
			_, err = env.Stdout.Write([]byte(b.String()))
			return err
		},
	}
	mf.add(cmd)
	return cmd
}
