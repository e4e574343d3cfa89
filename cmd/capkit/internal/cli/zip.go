package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/archive/zipfile"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func newZipCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "zip",
		Short: "Create ZIP archives from chosen files; extract only archives whose members you know by SHA-256",
		Long: fmt.Sprintf(`Create an archive from explicitly chosen files, or extract one into a new
directory given every member's SHA-256 (a manifest as sha256sum prints it).
Extraction refuses unexpected, missing or mismatching members (exit 9),
encrypted members, symlinks and other special files, unsafe or colliding names
(exit 2) and archives past the bounds (exit 6: %s members, %s per
member, %s in all, %s central directory, %d path elements); the
directory appears only when every member was written and verified.`,
			limits.Count(limits.ZipMaxFiles), limits.Bytes(limits.ZipMaxMemberBytes), limits.Bytes(limits.ZipMaxTotalBytes),
			limits.Bytes(limits.ZipMaxCentralDirectory), limits.ZipMaxPathDepth),
	}
	cmd.AddCommand(newZipCreateCmd(env), newZipExtractCmd(env), newZipListCmd(env), newZipVerifyCmd(env))
	return cmd
}

func newZipCreateCmd(env *Env) *cobra.Command {
	var dir string
	var store bool
	cmd := &cobra.Command{
		Use:   "create OUT.zip FILE...",
		Short: "Create a new archive of the given files and print its manifest",
		Long: `Create OUT.zip (which must not exist) holding the given regular files, each
named by its path relative to --dir (default: the current directory). Prints
the manifest, one "SHA256  NAME" line per member as sha256sum does, so
  capkit zip create out.zip a.txt b/c.txt > MANIFEST
records what "capkit zip extract out.zip DEST --expect MANIFEST" will expect.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := absPath(args[0])
			if err != nil {
				return err
			}
			base, err := absPath(dir)
			if err != nil {
				return err
			}
			var files []zipfile.Source
			for _, f := range args[1:] {
				p := filepath.Clean(f)
				if !filepath.IsAbs(f) {
					p = filepath.Join(base, f)
				}
				rel, rerr := filepath.Rel(base, p)
				if rerr != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
					return fault.New(fault.InvalidInput, "%s is not inside %s; members are named relative to --dir", f, base)
				}
				files = append(files, zipfile.Source{Name: filepath.ToSlash(rel), Path: p})
			}
			update, end := env.progress("zip")
			res, err := zipfile.Create(cmd.Context(), out, files, &zipfile.CreateOptions{Store: store, Progress: update})
			end()
			if err != nil {
				return err
			}
			return env.Print(res, res.Manifest())
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "directory member names are relative to")
	cmd.Flags().BoolVar(&store, "store", false, "store members uncompressed")
	return cmd
}

// readManifest reads the --expect manifest: a file, or "-" for standard
// input.
func readManifest(env *Env, path string) (zipfile.Expect, error) {
	if path == "" {
		return nil, fault.New(fault.InvalidInput, "--expect MANIFEST is required: one \"SHA256  NAME\" line per member, as sha256sum prints")
	}
	var r io.Reader = env.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fault.Wrap(fault.CodeOf(err), err, "opening the manifest failed")
		}
		defer f.Close()
		r = f
	}
	return zipfile.ParseManifest(r)
}

func newZipExtractCmd(env *Env) *cobra.Command {
	var manifest string
	cmd := &cobra.Command{
		Use:   "extract ARCHIVE DEST --expect MANIFEST",
		Short: "Extract an archive into a new directory, checking every member's SHA-256",
		Long: `Extract ARCHIVE into DEST, a new directory (its parent must exist). MANIFEST
("-" for standard input) lists every member as sha256sum prints it:
  <64 hex digits>  <name>
The archive must hold exactly those members with those digests. Extracted files
are private (0600, directories 0700).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			archive, err := absPath(args[0])
			if err != nil {
				return err
			}
			dest, err := absPath(args[1])
			if err != nil {
				return err
			}
			expect, err := readManifest(env, manifest)
			if err != nil {
				return err
			}
			update, end := env.progress("extract")
			res, err := zipfile.Extract(cmd.Context(), archive, dest, expect, &zipfile.ExtractOptions{Progress: update})
			end()
			if err != nil {
				return err
			}
			return env.Print(res, fmt.Sprintf("extracted %d files (%d bytes) into %s", res.Files, res.Bytes, args[1]))
		},
	}
	cmd.Flags().StringVar(&manifest, "expect", "", `manifest of expected members ("-" for standard input)`)
	return cmd
}

func newZipListCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "list ARCHIVE",
		Short: "Check an archive's structure and list its members (declared sizes)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			archive, err := absPath(args[0])
			if err != nil {
				return err
			}
			l, err := zipfile.List(cmd.Context(), archive, nil)
			if err != nil {
				return err
			}
			var b strings.Builder
			for _, e := range l.Entries {
				fmt.Fprintf(&b, "%12d  %s\n", e.Size, e.Name)
			}
			return env.Print(l, b.String())
		},
	}
}

func newZipVerifyCmd(env *Env) *cobra.Command {
	var manifest string
	cmd := &cobra.Command{
		Use:   "verify ARCHIVE --expect MANIFEST",
		Short: "Check an archive against a manifest without extracting it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			archive, err := absPath(args[0])
			if err != nil {
				return err
			}
			expect, err := readManifest(env, manifest)
			if err != nil {
				return err
			}
			update, end := env.progress("verify")
			res, err := zipfile.Verify(cmd.Context(), archive, expect, &zipfile.ReadOptions{Progress: update})
			end()
			if err != nil {
				return err
			}
			return env.Print(res, fmt.Sprintf("ok: %d files (%d bytes) match", res.Files, res.Bytes))
		},
	}
	cmd.Flags().StringVar(&manifest, "expect", "", `manifest of expected members ("-" for standard input)`)
	return cmd
}
