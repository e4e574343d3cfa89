package files

import "context"

// DirMaker is implemented by Providers that create directories; the tool
// that creates directories needs it, the other file tools do not.
type DirMaker interface {
	// MakeDir creates the directory name and its missing parents inside
	// root, reporting whether it created it (false: it already was a
	// directory). Something else at name is invalid_input; names under
	// TempPrefix are refused like every other mutation of them.
	MakeDir(ctx context.Context, root, name string) (created bool, err error)
}
