package testkit

import (
	"bytes"
	"fmt"
)

// GoSource is at least n bytes of lines of Go-like source, the text the
// search benchmarks scan: every line distinct, common words ("context",
// "err") on most of them.
func GoSource(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "func (s *server%d) handle(ctx context.Context, req *Request) error {\n", i)
		fmt.Fprintf(&b, "\tif err := s.check(req.ID%d); err != nil {\n\t\treturn fmt.Errorf(\"check: %%w\", err)\n\t}\n", i)
		b.WriteString("\treturn nil\n}\n\n")
	}
	return b.Bytes()
}
