package toolkit

import (
	"errors"
	"io"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/outbuf"
	"github.com/capkit/capkit/kernel"
)

// ToolText renders the text of a tool result whose structured content is
// meta (a kernel.Texter whose text is not set yet), so that the whole
// result fits max bytes: write gets a Buffer of what meta's encoding
// leaves and stops as soon as the text passes it. A text that does not fit
// fails with fault.OutputTooLarge,
// never truncated; any other write error is internal.
func ToolText(max int64, meta kernel.Texter, write func(io.Writer) error, what, hint string) (string, error) {
	enc, err := kernel.Encode(meta)
	if err != nil {
		return "", err
	}
	buf := &outbuf.Buffer{Max: max - int64(len(enc.Structured))}
	if err := write(buf); err != nil {
		if errors.Is(err, outbuf.ErrFull) {
			return "", fault.OutputTooLarge(what, 0, max, hint)
		}
		return "", fault.Wrap(fault.Internal, err, "rendering %s failed", what)
	}
	return buf.String(), nil
}
