package toolkit

import (
	"context"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

func call(t *testing.T, effects ...capability.Effect) *kernel.Call {
	t.Helper()
	rt, err := kernel.NewBuilder(&kernel.Options{DisableToolSearch: true}).Build()
	if err != nil {
		t.Fatal(err)
	}
	return &kernel.Call{Session: testkit.Session(t, rt, testkit.Grant(t, []string{"/srv"}, effects...))}
}

func TestRead(t *testing.T) {
	// The reader refuses content over the bound it is given, so the two
	// files show that Read passes max on: 4 bytes pass, 5 fail.
	fixture := testkit.Files{"x.html": []byte("abcd"), "big.html": []byte("abcde")}
	read := []capability.Effect{capability.ReadFile}
	cases := []struct {
		name       string
		reader     bool
		effects    []capability.Effect
		text, path string
		want       string
		code       fault.Code
	}{
		{"text", false, nil, "abc", "", "abc", ""},
		{"text at the bound", false, nil, "abcd", "", "abcd", ""},
		{"text past the bound", false, nil, "abcde", "", "", fault.Limit},
		{"path at the bound", true, read, "", "x.html", "abcd", ""},
		{"path past the bound", true, read, "", "big.html", "", fault.Limit},
		{"path without read roots", true, []capability.Effect{capability.Parse}, "", "x.html", "", fault.Denied},
		{"path without a reader", false, read, "", "x.html", "", fault.Denied},
		{"both", true, read, "abc", "x.html", "", fault.InvalidInput},
		{"neither", true, nil, "", "", "", fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var reader FileReader
			if c.reader {
				reader = fixture
			}
			got, err := Read(context.Background(), call(t, c.effects...), reader, c.text, c.path, 4, "doc")
			if fault.CodeOf(err) != c.code || string(got) != c.want {
				t.Fatalf("got %q %v", got, err)
			}
		})
	}
}
