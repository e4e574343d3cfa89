package fstools

import (
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/fault"
)

func TestSmoke(t *testing.T) {
	root := tempRoot(t)
	writeFile(t, filepath.Join(root, "a.txt"), "one\ntwo\nthree\n")
	rt := newRuntime(t, nil)
	s := newSession(t, rt, allEffects, root)
	t.Log(mustCall(t, s, ReadFile, obj{"path": "a.txt"}))
	wantCode(t, s, EditFile, obj{"path": "b.txt", "old_string": "x", "new_string": "y"}, fault.NotFound)
	t.Log(mustCall(t, s, EditFile, obj{"path": "a.txt", "old_string": "two", "new_string": "TWO"}))
	t.Log(mustCall(t, s, WriteFile, obj{"path": "d/new.txt", "content": "hi"}))
	t.Log(mustCall(t, s, ListDir, obj{}))
	t.Log(mustCall(t, s, Glob, obj{"pattern": "**/*.txt"}))
	t.Log(mustCall(t, s, Grep, obj{"pattern": "T.O"}))
	t.Log(mustCall(t, s, MoveFile, obj{"from": "d/new.txt", "to": "e/x.txt"}))
}
