package kernel

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/capkit/capkit/capability"
)

type pictureResult struct {
	Bytes int `json:"bytes"`
	data  []byte
}

func (r pictureResult) ToolText() string            { return "a picture" }
func (r pictureResult) ToolImage() (string, []byte) { return "image/png", r.data }

var _ Imager = pictureResult{}

// TestImageResult: a typed result that is an Imager carries its image in
// the Result, apart from the text the output bound counts; one with no
// bytes carries none.
func TestImageResult(t *testing.T) {
	b := NewBuilder(nil)
	err := AddTool(b, Policy{Name: "picture", MaxOutputBytes: 64}, Meta{Effect: capability.ReadFile, Hot: true, Title: "Picture", Summary: "a picture", Description: `Returns a picture.
Example: {"none": true}`},
		func(_ context.Context, _ *Call, in struct {
			None bool `json:"none,omitempty"`
		}) (pictureResult, error) {
			if in.None {
				return pictureResult{}, nil
			}
			return pictureResult{Bytes: 300, data: make([]byte, 300)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	caps, _ := capability.New("a", []capability.Effect{capability.ReadFile}, capability.Scope{Roots: []string{"/"}})
	s, err := rt.NewSession("a", []capability.Capability{caps}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 300 bytes of image under an output bound of 64: images are bounded
	// apart (limits.HardMaxOutputBytes), the text and structured content
	// by the policy.
	res, err := s.Call(context.Background(), "picture", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Image == nil || res.Image.MediaType != "image/png" || len(res.Image.Data) != 300 || res.Image.EncodedSize() != 400 {
		t.Fatalf("image %+v", res.Image)
	}
	if res, err := s.Call(context.Background(), "picture", json.RawMessage(`{"none":true}`)); err != nil || res.Image != nil {
		t.Fatalf("no image: %+v %v", res, err)
	}
	if e, _, _ := rt.Catalog().Lookup("picture"); e.Hints().Title != "Picture" {
		t.Fatalf("title %q", e.Hints().Title)
	}
}
