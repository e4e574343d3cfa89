package host

import (
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/fixedfiles"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/serve/script"
)

// registerCatalogs opens each [catalog.NAME] (its files are opened now,
// once, and closed with the host) and registers it as the tool NAME.
func registerCatalogs(b *kernel.Builder, h *Host) error {
	for _, name := range h.Config.CatalogNames() {
		cat, err := h.Config.OpenCatalog(name)
		if err != nil {
			return err
		}
		h.OnClose(cat.Close)
		cc := h.Config.Catalogs[name]
		tool := fixedfiles.CatalogTool{Name: name, Catalog: cat, Summary: cc.Summary, Description: cc.Description}
		if err := fixedfiles.RegisterTools(b, &fixedfiles.ToolOptions{Catalogs: []fixedfiles.CatalogTool{tool}}); err != nil {
			return h.Config.Errorf("catalog."+name, "%s", err)
		}
	}
	return nil
}

// registerScript registers run_script when [script] enabled = true. Its
// scripts run in a worker process: this executable's hidden `capkit
// script worker` command.
func registerScript(b *kernel.Builder, h *Host) error {
	if !h.Config.Script.Enabled {
		return nil
	}
	w, err := Worker()
	if err != nil {
		return err
	}
	opts := h.ScriptOptions()
	opts.Worker = w
	return script.RegisterTools(b, &script.ToolOptions{Run: opts})
}

// ScriptOptions are [script]'s options, with provenance's decisions and
// declassifications (never a value) going to the host's audit trail.
func (h *Host) ScriptOptions() script.Options {
	opts := h.Config.Script.Options()
	opts.Provenance = h.Config.ProvenancePolicy()
	if opts.Provenance != nil {
		opts.Provenance.Audit = h.audit
	}
	return opts
}

// Worker is the script worker of the capkit executable: its hidden
// `script worker` command, with an empty environment.
func Worker() (*script.Worker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "cannot locate the capkit executable for the script worker")
	}
	return &script.Worker{Command: []string{exe, "script", "worker"}}, nil
}
