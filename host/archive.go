package host

import (
	"context"

	"github.com/capkit/capkit/archive/textarchive"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/net/budget"
)

// registerArchive registers the text archive's tools when [archive]
// names a root (opened now, closed with the host), and archive_fetch when
// it names a source policy too (its budget opened now).
func registerArchive(b *kernel.Builder, h *Host) error {
	c := h.Config.Archive
	if c.Root == "" {
		h.notOffer("archive_", "[archive] root is not set: the archive tools need an archive root (capkit archive init; docs/archive.md)")
		return nil
	}
	ctx := context.Background()
	a, err := textarchive.Open(ctx, c.Root)
	if err != nil {
		return err
	}
	h.OnClose(a.Close)
	o := &textarchive.ToolOptions{Archive: a, Task: c.Task, Protected: h.protected}
	if c.SourcePolicy != "" {
		p, err := textarchive.LoadSourcePolicy(ctx, c.SourcePolicy)
		if err != nil {
			return err
		}
		bud, err := budget.Open(ctx, c.BudgetLocator(), p.Budget(), &budget.Options{Log: h.Log})
		if err != nil {
			return err
		}
		h.OnClose(bud.Close)
		o.Source = &textarchive.Source{Policy: p, Budget: bud}
	}
	return textarchive.RegisterTools(b, o)
}
