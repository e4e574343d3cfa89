package kernel

import (
	"encoding/base64"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Imager is implemented by typed results that carry an image besides their
// text: a transport shows it to the model as image content (MCP
// ImageContent). ToolImage returns the media type and the bytes, or empty
// bytes for no image. The data must not change after the result is
// returned.
type Imager interface {
	ToolImage() (mediaType string, data []byte)
}

// Image is image content of a Result.
type Image struct {
	// MediaType is the image's type, as sniffed by the tool ("image/png").
	MediaType string
	Data      []byte
}

// EncodedSize is the image's size as a transport sends it (base64).
func (im *Image) EncodedSize() int64 { return int64(base64.StdEncoding.EncodedLen(len(im.Data))) }

// How an image counts: not against the policy's output bound, which is
// sized for text a model reads as tokens (an image costs tokens by its
// pixels, not its bytes), but against limits.HardMaxOutputBytes, encoded;
// each tool that returns images bounds them itself. The audit counts an
// image's encoded bytes among the output bytes.

// attachImage sets res.Image from v when v is an Imager with an image.
func attachImage(res *Result, v any) {
	im, ok := v.(Imager)
	if !ok {
		return
	}
	if mt, data := im.ToolImage(); len(data) > 0 {
		res.Image = &Image{MediaType: mt, Data: data}
	}
}

// checkImage refuses a result whose image is past the hard output bound.
func checkImage(name string, res *Result) error {
	if res.Image == nil {
		return nil
	}
	if size := res.Image.EncodedSize(); size > limits.HardMaxOutputBytes {
		return fault.LimitExceeded("tool "+name+" image bytes (encoded)", limits.HardMaxOutputBytes, size)
	}
	return nil
}
