package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/archive/textarchive"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
)

func newArchiveCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "archive",
		Short: "A text and file archive: exact versions, citations that can be checked, backups verified before they publish",
		Long: fmt.Sprintf(`An archive root (a directory: one SQLite database and content-addressed
blobs) keeps documents and files as versions that never change: the same
request identity with the same content returns the same version, with other
content it is a conflict (exit 4). Every version stays citable after newer
ones; search covers current versions. Citations are in Unicode code points
and carry the part's SHA-256, so "cite --check" can verify them later.

Bounds: %s parts and %s of text per document, %s per file, %s records
per list, versions or search call, %s characters per citation, %s per
backup or restore. Exit 9 (integrity) when an audit, a check or a restore
finds something wrong.`,
			limits.Count(limits.ArchiveMaxParts), limits.Bytes(limits.ArchiveMaxTextBytes), limits.Bytes(limits.ArchiveMaxFileBytes),
			limits.Count(limits.ArchiveMaxRecords), limits.Count(limits.ArchiveMaxCiteChars), limits.Bytes(limits.ArchiveBackupMaxBytes)),
	}
	cmd.AddCommand(newArchiveInitCmd(env), newArchiveAddTextCmd(env), newArchiveAddFileCmd(env),
		newArchiveListCmd(env), newArchiveVersionsCmd(env), newArchiveSearchCmd(env), newArchiveCiteCmd(env),
		newArchiveFetchCmd(env), newArchiveBackupCmd(env), newArchiveRestoreCmd(env), newArchiveVerifyBackupCmd(env),
		newArchiveMigrateCmd(env), newArchiveAuditCmd(env), newArchiveRebuildCmd(env), newArchiveCleanupCmd(env))
	return cmd
}

// inArchive runs op on the archive root dir, open for it alone.
func inArchive(cmd *cobra.Command, dir string, op func(*textarchive.Archive) error) error {
	a, err := textarchive.Open(cmd.Context(), dir)
	if err != nil {
		return err
	}
	defer a.Close()
	return op(a)
}

func newArchiveInitCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "init DIR",
		Short: "Create a new, empty archive root at DIR (which must not exist)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := textarchive.Init(cmd.Context(), args[0]); err != nil {
				return err
			}
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				return env.Print(map[string]string{"root": a.Dir(), "id": a.ID()}, "archive "+a.ID()+" created at "+a.Dir())
			})
		},
	}
}

// targetFlags are the collection, item and request of an add.
type targetFlags struct{ collection, item, request string }

func (f *targetFlags) add(cmd *cobra.Command, itemRequired bool) {
	cmd.Flags().StringVar(&f.collection, "collection", "", "collection (required)")
	cmd.Flags().StringVar(&f.request, "request", "", "request identity: the same identity with the same content returns the same version (required)")
	cmd.MarkFlagRequired("collection")
	cmd.MarkFlagRequired("request")
	if itemRequired {
		cmd.Flags().StringVar(&f.item, "item", "", "item (required)")
		cmd.MarkFlagRequired("item")
	} else {
		cmd.Flags().StringVar(&f.item, "item", "", "item (default: the file's name)")
	}
}

func newArchiveAddTextCmd(env *Env) *cobra.Command {
	var tf targetFlags
	cmd := &cobra.Command{
		Use:   "add-text DIR --collection C --item I --request R PARTS.json",
		Short: "Keep a document (its parts' text, pages, methods and warnings) as a version of an item",
		Long: fmt.Sprintf(`Keep the document in PARTS.json (- for standard input) as a new version of
item I of collection C:
  {"parts": [{"text": "...", "page": 1, "method": "ocr", "warnings": ["..."]}],
   "title": "...", "source_url": "https://..."}
Pages, methods and warnings are the caller's, kept as given. At most %s
parts and %s of text in all. The same request identity with the same
document returns its version; with another it is a conflict (exit 4); a new
request whose document the item's current version holds returns that
version.`, limits.Count(limits.ArchiveMaxParts), limits.Bytes(limits.ArchiveMaxTextBytes)),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readDocArg(env, args[1], limits.ArchiveMaxDocumentJSONBytes)
			if err != nil {
				return err
			}
			d, err := textarchive.ParseDocument(cmd.Context(), data)
			if err != nil {
				return err
			}
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				out, err := a.AddText(cmd.Context(), textarchive.TextRequest{Collection: tf.collection, Item: tf.item, Request: tf.request, Document: *d})
				if err != nil {
					return err
				}
				return env.Print(out, out.ToolText())
			})
		},
	}
	tf.add(cmd, true)
	return cmd
}

func newArchiveAddFileCmd(env *Env) *cobra.Command {
	var tf targetFlags
	var mediaType, name string
	cmd := &cobra.Command{
		Use:   "add-file DIR --collection C --request R --media-type T FILE",
		Short: "Keep a file's bytes (content-addressed, stored once) as a version of an item",
		Long: fmt.Sprintf(`Keep the bytes of the regular file FILE (at most %s) as a new version of
an item of collection C (--item, default the file's name), with its name and
media type. Blobs are named by their SHA-256 and stored once; they are never
executed or published outside the archive root.`, limits.Bytes(limits.ArchiveMaxFileBytes)),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := absPath(args[1])
			if err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				return fault.Wrap(fault.CodeOf(err), err, "%s cannot be opened", args[1])
			}
			defer f.Close()
			if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
				return fault.New(fault.InvalidInput, "%s is not a regular file", args[1])
			}
			if name == "" {
				name = filepath.Base(path)
			}
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				out, err := a.AddFile(cmd.Context(), textarchive.FileRequest{Collection: tf.collection, Item: tf.item, Request: tf.request, Name: name, MediaType: mediaType}, f)
				if err != nil {
					return err
				}
				return env.Print(out, out.ToolText())
			})
		},
	}
	tf.add(cmd, false)
	cmd.Flags().StringVar(&mediaType, "media-type", "", "the file's media type, such as application/pdf (required)")
	cmd.Flags().StringVar(&name, "name", "", "the file's name (default: FILE's base name)")
	cmd.MarkFlagRequired("media-type")
	return cmd
}

// windowFlags are --limit and --offset.
type windowFlags struct{ limit, offset int }

func (f *windowFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().IntVar(&f.limit, "limit", 0, fmt.Sprintf("%s to show, at most %d (default %d)", what, limits.ArchiveMaxRecords, limits.ArchiveDefaultRecords))
	cmd.Flags().IntVar(&f.offset, "offset", 0, what+" to skip first: the previous answer's next_offset")
}

func newArchiveListCmd(env *Env) *cobra.Command {
	var collection string
	var wf windowFlags
	cmd := &cobra.Command{
		Use:   "list DIR --collection C [--limit N] [--offset K]",
		Short: "List a collection's items, each with its current version",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				l, err := a.List(cmd.Context(), textarchive.ListQuery{Collection: collection, Limit: wf.limit, Offset: wf.offset})
				if err != nil {
					return err
				}
				return env.Print(l, l.ToolText())
			})
		},
	}
	cmd.Flags().StringVar(&collection, "collection", "", "collection (required)")
	cmd.MarkFlagRequired("collection")
	wf.add(cmd, "items")
	return cmd
}

func newArchiveVersionsCmd(env *Env) *cobra.Command {
	var collection, item string
	var wf windowFlags
	cmd := &cobra.Command{
		Use:   "versions DIR --collection C --item I [--limit N] [--offset K]",
		Short: "List an item's versions, oldest first; every one stays citable",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				l, err := a.Versions(cmd.Context(), textarchive.VersionsQuery{Collection: collection, Item: item, Limit: wf.limit, Offset: wf.offset})
				if err != nil {
					return err
				}
				return env.Print(l, l.ToolText())
			})
		},
	}
	cmd.Flags().StringVar(&collection, "collection", "", "collection (required)")
	cmd.Flags().StringVar(&item, "item", "", "item (required)")
	cmd.MarkFlagRequired("collection")
	cmd.MarkFlagRequired("item")
	wf.add(cmd, "versions")
	return cmd
}

func newArchiveAuditCmd(env *Env) *cobra.Command {
	var sample string
	cmd := &cobra.Command{
		Use:   "audit DIR [--sample P%]",
		Short: "Check every blob, every version's text, the chain of versions, the index and the database (exit 9 on a problem)",
		Long: `Re-hash every blob against its name, every version's text against its
parts' SHA-256 and its digest, follow the chain of versions to its head,
check the index against the stored text of current versions and run
SQLite's integrity check. --sample P% checks about P% of the versions and
blobs, chosen at random, and says what it covered and what it left out.
A report with problems exits 9 and names each object; "capkit archive
rebuild" repairs those it marks repairable.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var o textarchive.AuditOptions
			if sample != "" {
				p, err := textarchive.ParsePercent(sample)
				if err != nil {
					return err
				}
				o.SamplePercent = p
			}
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				r, err := a.Audit(cmd.Context(), o)
				if err != nil {
					return err
				}
				if err := env.Print(r, r.Text()); err != nil {
					return err
				}
				if !r.Clean() {
					return &commandExit{code: fault.Integrity.ExitCode()}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&sample, "sample", "", "audit about this share of versions and blobs, such as 10%")
	return cmd
}

func newArchiveSearchCmd(env *Env) *cobra.Command {
	var collection, mode string
	var snippets bool
	var wf windowFlags
	cmd := &cobra.Command{
		Use:   "search DIR QUERY [--collection C] [--limit N] [--offset K]",
		Short: "Rank the parts of current versions by BM25; each hit names its collection, item, version and part",
		Long: fmt.Sprintf(`Search the text of every item's current version (older versions stay
citable, not searchable) with the lexical index's engine (SQLite FTS5,
BM25). --mode terms (default: every word), phrase, or fts (FTS5's query
syntax; a malformed query exits 2 naming the character). At most %d hits
a call (--limit, default %d) from rank --offset on (at most %d).`,
			limits.ArchiveMaxRecords, limits.ArchiveDefaultRecords, limits.ArchiveMaxSearchOffset),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				r, err := a.Search(cmd.Context(), textarchive.SearchQuery{Text: args[1], Mode: mode, Collection: collection, Limit: wf.limit, Offset: wf.offset, Snippets: snippets})
				if err != nil {
					return err
				}
				return env.Print(r, r.ToolText())
			})
		},
	}
	cmd.Flags().StringVar(&collection, "collection", "", "only this collection")
	cmd.Flags().StringVar(&mode, "mode", "", "terms (default), phrase or fts")
	cmd.Flags().BoolVar(&snippets, "snippets", false, "an excerpt of each hit, matches in «»")
	wf.add(cmd, "hits")
	return cmd
}

func newArchiveCiteCmd(env *Env) *cobra.Command {
	var part int
	var start, length int64
	var check string
	cmd := &cobra.Command{
		Use:   "cite DIR VERSION --part P --start S --length L | cite DIR --check CITATION.json",
		Short: "Cite a span of a version's part (code points), or check a citation made before (exit 9 if it no longer holds)",
		Long: fmt.Sprintf(`Print the span of part P of VERSION (such as v12) from character S, L
characters long (Unicode code points; at most %s, inside one part), as a
citation: the archive, collection, item, version and its digest, the part
and the SHA-256 of its whole text, a position selector and a quote
selector (the exact text with up to %d characters before and after).
Any version can be cited, not only current ones. With --check, read a
citation (- for standard input) and verify it against the archive: the
digests, and the quote at its position; anything that differs exits 9.`,
			limits.Count(limits.ArchiveMaxCiteChars), limits.ArchiveQuoteContextChars),
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (check != "") != (len(args) == 1) {
				return fault.New(fault.InvalidInput, "give VERSION --part --start --length, or --check CITATION.json alone")
			}
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				if check != "" {
					data, err := readDocArg(env, check, limits.ArchiveMaxCitationBytes)
					if err != nil {
						return err
					}
					c, err := textarchive.ParseCitation(data)
					if err != nil {
						return err
					}
					r, err := a.Check(cmd.Context(), c)
					if err != nil {
						return err
					}
					return env.Print(r, r.Text())
				}
				c, err := a.Cite(cmd.Context(), textarchive.CiteRequest{Version: args[1], Part: part, Start: start, Length: length})
				if err != nil {
					return err
				}
				return env.Print(c, c.ToolText())
			})
		},
	}
	cmd.Flags().IntVar(&part, "part", 0, "part index, from 0")
	cmd.Flags().Int64Var(&start, "start", 0, "first character of the span, from 0 (code points)")
	cmd.Flags().Int64Var(&length, "length", 0, "characters in the span (code points)")
	cmd.Flags().StringVar(&check, "check", "", "verify this citation (a file, or - for standard input)")
	return cmd
}

func newArchiveFetchCmd(env *Env) *cobra.Command {
	var tf targetFlags
	var policy, root, store, task string
	cmd := &cobra.Command{
		Use:   "fetch DIR URL --source-policy S.json (--budget-root B | --budget-store postgres://...) --task T --request R",
		Short: "Fetch a public https URL under an approved source policy and budget and retain the result as a version",
		Long: fmt.Sprintf(`Fetch URL (GET) under the source policy S.json and keep the result in the
archive: its text (an HTML page's visible text, a text body as it is) and,
with "retention": "original", the body itself. The policy (format 1):
  {"format": 1, "group": "news", "hosts": ["example.org"], "retention": "text_only"}
names the budget group, the reviewed hosts and what is kept; absent bounds
default to %s a response, %d requests, %d redirects, %s, and a window of
%s, %d requests and %s (window_seconds, window_requests, window_bytes,
min_interval_seconds %d). The operation (--request R) is admitted in the
archive before any request is sent: repeating it returns the retained
result without fetching again; repeating one whose first GET may have
reached the server (a crash, a failure after sending) fetches again and
says so. The collection defaults to the policy's group, the item to URL.`,
			limits.Bytes(limits.ArchiveFetchResponseBytes), limits.ArchiveFetchRequests, limits.ArchiveFetchRedirects,
			limits.Duration(limits.ArchiveFetchDeadline), limits.Duration(limits.ArchiveFetchWindow), limits.ArchiveFetchWindowRequests,
			limits.Bytes(limits.ArchiveFetchWindowBytes), limits.ArchiveFetchMinIntervalSeconds),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if (root == "") == (store == "") {
				return fault.New(fault.InvalidInput, "give exactly one of --budget-root DIR or --budget-store postgres://...")
			}
			if store != "" && !budget.IsPostgres(store) {
				return fault.New(fault.InvalidInput, "--budget-store must be a postgres:// URL")
			}
			p, err := textarchive.LoadSourcePolicy(ctx, policy)
			if err != nil {
				return err
			}
			b, err := budget.Open(ctx, root+store, p.Budget(), nil)
			if err != nil {
				return err
			}
			defer b.Close()
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				out, err := a.Fetch(ctx, &textarchive.Source{Policy: p, Budget: b}, textarchive.FetchRequest{
					URL: args[1], Collection: tf.collection, Item: tf.item, Request: tf.request, Task: task})
				if err != nil {
					return err
				}
				return env.Print(out, out.ToolText())
			})
		},
	}
	cmd.Flags().StringVar(&policy, "source-policy", "", "the approved source policy (format 1) (required)")
	cmd.Flags().StringVar(&root, "budget-root", "", "the budget's SQLite root directory")
	cmd.Flags().StringVar(&store, "budget-store", "", "the budget's PostgreSQL store (postgres://...)")
	cmd.Flags().StringVar(&task, "task", "", "stable task identity budget charges go to (required)")
	cmd.Flags().StringVar(&tf.collection, "collection", "", "collection (default: the policy's group)")
	cmd.Flags().StringVar(&tf.item, "item", "", "item (default: the URL)")
	cmd.Flags().StringVar(&tf.request, "request", "", "the operation's identity: a repeat returns the retained result (required)")
	for _, f := range []string{"source-policy", "task", "request"} {
		cmd.MarkFlagRequired(f)
	}
	return cmd
}

// backupFlags bound a backup, restore or verification.
type backupFlags struct {
	max      int64
	manifest string
}

func (f *backupFlags) add(cmd *cobra.Command, pin bool) {
	cmd.Flags().Int64Var(&f.max, "max-bytes", 0, fmt.Sprintf("aggregate bound of the database and blobs (default and most: %s)", limits.Bytes(limits.ArchiveBackupMaxBytes)))
	if pin {
		cmd.Flags().StringVar(&f.manifest, "manifest-sha256", "", "the manifest's SHA-256 the backup reported: anything else is refused")
	}
}

func (f *backupFlags) options() *textarchive.BackupOptions {
	return &textarchive.BackupOptions{MaxBytes: f.max, ManifestSHA256: f.manifest}
}

func newArchiveBackupCmd(env *Env) *cobra.Command {
	var bf backupFlags
	cmd := &cobra.Command{
		Use:   "backup DIR FILE",
		Short: "Write a verified backup of the archive to the new file FILE (a tar stream; appears complete or not at all)",
		Long: fmt.Sprintf(`Snapshot the database, audit the snapshot, and write it with every blob a
version names to FILE (which must not exist, nor be a symlink, and must be
outside DIR), re-hashing each blob as it
is copied: a damaged original fails the backup (exit 9) before anything is
published. At most %s in all (--max-bytes narrows it); no bound on the
number of objects. Prints the manifest's SHA-256, which pins the backup.`, limits.Bytes(limits.ArchiveBackupMaxBytes)),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := absPath(args[1])
			if err != nil {
				return err
			}
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				r, err := a.Backup(cmd.Context(), file, bf.options())
				if err != nil {
					return err
				}
				return env.Print(r, r.Text())
			})
		},
	}
	bf.add(cmd, false)
	return cmd
}

func newArchiveRestoreCmd(env *Env) *cobra.Command {
	var bf backupFlags
	cmd := &cobra.Command{
		Use:   "restore FILE NEWDIR",
		Short: "Restore a backup into the new directory NEWDIR, verifying every digest and auditing it before it is published",
		Long: `Write every entry of FILE into a staging directory beside NEWDIR, check
each against the manifest (the database's SHA-256, each blob's name, the
list of blobs), audit the restored archive in full, and only then rename
the staging directory to NEWDIR (which must not exist; nothing is ever
replaced). A damaged or altered backup exits 9 with nothing published.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := absPath(args[0])
			if err != nil {
				return err
			}
			r, err := textarchive.Restore(cmd.Context(), file, args[1], bf.options())
			if err != nil {
				return err
			}
			return env.Print(r, r.Text())
		},
	}
	bf.add(cmd, true)
	return cmd
}

func newArchiveVerifyBackupCmd(env *Env) *cobra.Command {
	var bf backupFlags
	cmd := &cobra.Command{
		Use:   "verify-backup FILE",
		Short: "Check a backup as restore does (every digest, a full audit) in a staging directory it removes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, err := absPath(args[0])
			if err != nil {
				return err
			}
			r, err := textarchive.VerifyBackup(cmd.Context(), file, bf.options())
			if err != nil {
				return err
			}
			return env.Print(r, r.Text())
		},
	}
	bf.add(cmd, true)
	return cmd
}

func newArchiveMigrateCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate DIR",
		Short: "Bring the archive to this capkit's schema, forward only, keeping the original database",
		Long: `Keep a copy of the database under DIR/retained/archive-schema-N.db, then
run every migration from its schema to this capkit's in one transaction (a
crash leaves it undone or done). An archive at this schema is left as it
is; one made by a newer capkit is refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := textarchive.Migrate(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return env.Print(m, m.Text())
		},
	}
}

func newArchiveRebuildCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "rebuild DIR",
		Short: "Repair what verified copies allow (stored text, the index) and audit after (exit 9 if problems remain)",
		Long: `Take damaged stored text again from a verified copy (the index's, when it
still has the part's SHA-256, or a fetched version's retained original),
then make the index anew from the stored text of current versions that
verifies, in one transaction; a full audit follows. Nothing is
substituted: blobs, manifests and the chain are never changed, and what no
copy verifies stays named in the audit (restore it from a backup).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				r, err := a.Rebuild(cmd.Context())
				if err != nil {
					return err
				}
				if err := env.Print(r, r.Text()); err != nil {
					return err
				}
				if !r.Audit.Clean() {
					return &commandExit{code: fault.Integrity.ExitCode()}
				}
				return nil
			})
		},
	}
}

func newArchiveCleanupCmd(env *Env) *cobra.Command {
	var preview bool
	var apply string
	cmd := &cobra.Command{
		Use:   "cleanup DIR --preview | --apply TOKEN",
		Short: "Remove what interrupted operations left: preview it with a token, then apply exactly that preview",
		Long: `--preview lists what a cleanup would remove, and only that: staging entries
of the archive's own directories whose writer is gone, and what an
operation that staged a blob and never committed left (its record, its
blob when no version names it); never a version, a named blob or a file
the archive did not make. It prints a token; --apply TOKEN removes exactly
what that preview listed, or nothing (exit 4) when the archive changed
since or the token is not one.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if preview == (apply != "") {
				return fault.New(fault.InvalidInput, "give --preview, or --apply TOKEN from a preview")
			}
			return inArchive(cmd, args[0], func(a *textarchive.Archive) error {
				if preview {
					p, err := a.CleanupPreview(cmd.Context())
					if err != nil {
						return err
					}
					return env.Print(p, p.Text())
				}
				c, err := a.CleanupApply(cmd.Context(), apply)
				if err != nil {
					return err
				}
				return env.Print(c, c.Text())
			})
		},
	}
	cmd.Flags().BoolVar(&preview, "preview", false, "list what would be removed and the token that applies it")
	cmd.Flags().StringVar(&apply, "apply", "", "remove exactly what the preview with this token listed")
	return cmd
}
