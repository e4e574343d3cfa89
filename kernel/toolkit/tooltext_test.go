package toolkit

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
)

type meta struct {
	N    int `json:"n"`
	text string
}

func (m meta) ToolText() string { return m.text }

func TestToolText(t *testing.T) {
	m := meta{N: 7}
	enc, err := kernel.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	const text = "hello, world"
	fit := int64(len(enc.Structured) + len(text))
	write := func(w io.Writer) error { _, err := io.WriteString(w, text); return err }
	cases := []struct {
		name  string
		max   int64
		write func(io.Writer) error
		code  fault.Code
		msg   string
	}{
		{"at the bound", fit, write, "", ""},
		{"one past the bound", fit - 1, write, fault.Limit, "the text exceeds this tool's output bound of " + strconv.FormatInt(fit-1, 10) + " bytes: ask for less"},
		{"writer fails", fit, func(io.Writer) error { return errors.New("boom") }, fault.Internal, "rendering the text failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ToolText(c.max, m, c.write, "the text", "ask for less")
			if fault.CodeOf(err) != c.code {
				t.Fatalf("code %q (%v), want %q", fault.CodeOf(err), err, c.code)
			}
			if err != nil {
				if !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("message %q lacks %q", err, c.msg)
				}
				return
			}
			res, err := kernel.Encode(meta{N: m.N, text: got})
			if err != nil || got != text || res.Size() != c.max {
				t.Fatalf("text %q, result %d bytes, %v", got, res.Size(), err)
			}
		})
	}
}
