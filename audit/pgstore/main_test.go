package pgstore

import (
	"os"
	"testing"

	"github.com/capkit/capkit/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
