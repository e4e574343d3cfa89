package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/fixedfiles"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/limits"
)

// catalogReport is what `capkit catalog check` prints for one catalog.
type catalogReport struct {
	Name         string        `json:"name"`
	MaxEntries   int           `json:"max_entries"`
	MaxFileBytes int64         `json:"max_file_bytes"`
	Entries      []entryReport `json:"entries"`
}

// entryReport is one entry's state: "ok", or the fault code that a read
// would fail with, and the host-side detail.
type entryReport struct {
	ID      string `json:"id"`
	Path    string `json:"path"`
	Bytes   int64  `json:"bytes"`
	State   string `json:"state"`
	Problem string `json:"problem,omitempty"`
}

func newCatalogCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Check fixed-file catalogs",
		Long: `A fixed-file catalog serves reviewed text files to a model under opaque
identifiers, as one tool per catalog ([catalog.NAME] in capkit.toml). The
files are opened once at setup; the model names entries, never paths.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Validate a configuration's catalogs and report each entry's size and state",
		Long: fmt.Sprintf(`check reads the configuration FILE, then opens and reads every catalog entry
as the catalog tool would: a regular file, within max_file_bytes, valid
UTF-8. It prints each entry's size and state ("ok" or the failure code with
the reason) and exits with the first failure's code when any entry cannot
be served (2 invalid_input, 3 not_found, 6 limit, 9 integrity, 10 io).

Example:
  capkit catalog check capkit.toml
  catalog release_notes: 2 entries, at most %d entries of %d bytes
    changelog      1834 bytes  ok         /srv/app/CHANGELOG.md
    release.notes  0 bytes     not_found  catalog entry "release.notes": cannot open ...`,
			limits.CatalogDefaultEntries, limits.CatalogDefaultFileBytes),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(args[0])
			if err != nil {
				return setupFault(err)
			}
			var reports []catalogReport
			var first *fault.Error
			bad, total := 0, 0
			for _, name := range cfg.CatalogNames() {
				r, err := checkCatalog(cfg, name)
				if err != nil {
					return err
				}
				for _, e := range r.Entries {
					total++
					if e.State != "ok" {
						bad++
						if first == nil {
							first = fault.New(fault.Code(e.State), "%s", e.State)
						}
					}
				}
				reports = append(reports, r)
			}
			if err := env.Print(map[string]any{"catalogs": reports}, catalogText(reports)); err != nil {
				return err
			}
			if first != nil {
				first.Message = fmt.Sprintf("%d of %d catalog entries cannot be served", bad, total)
				return first
			}
			return nil
		},
	})
	return cmd
}

// checkCatalog checks each entry on its own, so one bad entry does not
// hide the state of the others.
func checkCatalog(cfg *config.Config, name string) (catalogReport, error) {
	o := cfg.Catalogs[name].Options()
	empty, err := fixedfiles.NewBuilder(o)
	if err != nil {
		return catalogReport{}, err
	}
	limits, _ := empty.Build()
	r := catalogReport{Name: name, MaxEntries: limits.Limits().MaxEntries, MaxFileBytes: limits.Limits().MaxFileBytes, Entries: []entryReport{}}
	for _, e := range cfg.CatalogEntries(name) {
		er := entryReport{ID: e.ID, Path: e.Path, State: "ok"}
		if st, err := os.Stat(e.Path); err == nil {
			er.Bytes = st.Size()
		}
		if data, err := readEntry(o, e); err != nil {
			fe := fault.As(err)
			er.State, er.Problem = string(fe.Code), fe.Error()
		} else {
			er.Bytes = int64(len(data))
		}
		r.Entries = append(r.Entries, er)
	}
	return r, nil
}

func readEntry(o *fixedfiles.Options, e config.CatalogEntry) ([]byte, error) {
	b, err := fixedfiles.NewBuilder(o)
	if err != nil {
		return nil, err
	}
	if err := b.InsertPath(e.ID, e.Path); err != nil {
		b.Close()
		return nil, err
	}
	cat, err := b.Build()
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	return cat.Read(e.ID)
}

func catalogText(reports []catalogReport) string {
	if len(reports) == 0 {
		return "no catalogs are configured"
	}
	var b strings.Builder
	for _, r := range reports {
		fmt.Fprintf(&b, "catalog %s: %d entries, at most %d entries of %d bytes\n", r.Name, len(r.Entries), r.MaxEntries, r.MaxFileBytes)
		idw, sw := 0, 0
		for _, e := range r.Entries {
			idw = max(idw, len(e.ID))
			sw = max(sw, len(e.State))
		}
		for _, e := range r.Entries {
			detail := e.Path
			if e.Problem != "" {
				detail = e.Problem
			}
			fmt.Fprintf(&b, "  %-*s  %8d bytes  %-*s  %s\n", idw, e.ID, e.Bytes, sw, e.State, detail)
		}
	}
	return b.String()
}
