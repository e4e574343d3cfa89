package cli

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressMinBytes is the smallest operation that gets a progress bar:
// smaller ones finish before a bar would help.
const progressMinBytes = 32 << 20

// progress returns a callback that draws a byte progress bar on standard
// error, and a function to call when the operation ends (it erases the
// bar). Both do nothing unless standard error is a terminal, so piped and
// scripted runs stay quiet; the bar appears once the total is known and
// at least progressMinBytes. Any command group may use it.
func (env *Env) progress(desc string) (update func(done, total int64), end func()) {
	if !isTerminal(env.Stderr) {
		return nil, func() {}
	}
	var bar *progressbar.ProgressBar
	update = func(done, total int64) {
		if bar == nil {
			if total < progressMinBytes {
				return
			}
			bar = progressbar.NewOptions64(total,
				progressbar.OptionSetWriter(env.Stderr),
				progressbar.OptionSetDescription(desc),
				progressbar.OptionShowBytes(true),
				progressbar.OptionShowTotalBytes(true),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionSetWidth(30),
				progressbar.OptionClearOnFinish(),
			)
		}
		bar.Set64(done)
	}
	end = func() {
		if bar != nil {
			bar.Clear()
		}
	}
	return update, end
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
