package tools

import (
	"context"
	"io"
	"net/http"
	"strconv"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

// imageTypes are the media types read_file returns as images: those MCP
// clients show to models.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// readImage returns f as an image when its first bytes say it is one
// (net/http's sniffing, never the name); ok is false for anything else.
// The image is read whole, at most limits.ReadImageMaxBytes.
func (x *executor) readImage(ctx context.Context, req request, t target, f files.File) (res ReadResult, ok bool, err error) {
	var head [limits.ReadSniffBytes]byte
	n, err := f.ReadAt(head[:], 0)
	if err != nil && err != io.EOF {
		return ReadResult{}, false, err
	}
	mt := http.DetectContentType(head[:n])
	if !imageTypes[mt] {
		return ReadResult{}, false, nil
	}
	size := f.Info().Size
	if size > limits.ReadImageMaxBytes {
		return ReadResult{}, true, fault.LimitExceeded(t.display+": image bytes", limits.ReadImageMaxBytes, size)
	}
	data := make([]byte, 0, size+1)
	for len(data) <= limits.ReadImageMaxBytes {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // a file that grew since its stat
		}
		m, rerr := f.Read(data[len(data):min(cap(data), limits.ReadImageMaxBytes+1)])
		data = data[:len(data)+m]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return ReadResult{}, true, rerr
		}
		if err := ctx.Err(); err != nil {
			return ReadResult{}, true, fault.As(err)
		}
	}
	if len(data) > limits.ReadImageMaxBytes {
		return ReadResult{}, true, fault.LimitExceeded(t.display+": image bytes", limits.ReadImageMaxBytes, int64(len(data)))
	}
	res = ReadResult{Path: t.display, Bytes: int64(len(data)), MediaType: mt, image: data}
	res.text = []byte(t.display + ": " + mt + " image, " + strconv.Itoa(len(data)) + " bytes (shown as an image)\n")
	if v, ok := f.Version(); ok {
		x.events.Observed(ctx, files.Observation{Session: req.session, Op: files.OpRead, Root: t.root, Name: t.name, Version: v})
	}
	return res, true, nil
}
