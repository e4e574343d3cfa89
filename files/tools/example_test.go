package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/files/tools"
	"github.com/capkit/capkit/kernel"
)

// A host registers the file tools with the file policy attached, grants a session the file effects on a
// root, and calls them through the kernel. An edit needs a prior read.
func ExampleRegisterTools() {
	root, _ := os.MkdirTemp("", "capkit-example")
	defer os.RemoveAll(root)
	root, _ = filepath.EvalSymlinks(root)
	os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello\nworld\n"), 0o644)

	b := kernel.NewBuilder(nil)
	if err := tools.RegisterTools(b, &tools.ToolOptions{Events: policy.NewEvents()}); err != nil {
		panic(err)
	}
	rt, _ := b.Build()
	grant, _ := capability.New("model", []capability.Effect{capability.ReadFile, capability.EditFile},
		capability.Scope{Roots: []string{root}})
	s, _ := rt.NewSession("model", []capability.Capability{grant}, nil)

	ctx := context.Background()
	call := func(tool string, args any) {
		raw, _ := json.Marshal(args)
		res, err := s.Call(ctx, tool, raw)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Print(res.Text)
	}
	call(tools.EditFile, map[string]any{"path": "hello.txt", "old_string": "world", "new_string": "there"})
	call(tools.ReadFile, map[string]any{"path": "hello.txt"})
	call(tools.EditFile, map[string]any{"path": "hello.txt", "old_string": "world", "new_string": "there"})
	// Output:
	// error: hello.txt: this session has not read the file; read it with read_file first, then edit. Nothing was changed
	//      1	hello
	//      2	world
	// (lines 1–2 of 2)
	// edited hello.txt: 1 replacement
	// @@ -1,2 +1,2 @@
	//  hello
	// -world
	// +there
}
