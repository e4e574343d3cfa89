package limits

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Bytes(2 * MiB), "2 MiB"}, {Bytes(64 * KiB), "64 KiB"}, {Bytes(GiB + GiB/2), "1.5 GiB"},
		{Bytes(1023), "1,023 bytes"}, {Bytes(0), "0 bytes"}, {Bytes(KiB), "1 KiB"},
		{Count(12_000), "12,000"}, {Count(1_000_000), "1,000,000"}, {Count(999), "999"}, {Count(-1234), "-1,234"}, {Count(0), "0"},
		{Duration(30 * time.Second), "30s"}, {Duration(10 * time.Minute), "10m"}, {Duration(90 * time.Minute), "1h30m"},
		{Duration(2 * time.Hour), "2h"}, {Duration(1500 * time.Millisecond), "1.5s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
