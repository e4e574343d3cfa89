package limits

import (
	"strconv"
	"time"
)

// Bytes writes a byte count as people read a bound: "2 MiB", "64 KiB",
// "1.5 GiB", or "512 bytes", so that descriptions and help text quote the
// constants instead of repeating their numbers.
func Bytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if n >= u.size {
			return strconv.FormatFloat(float64(n)/float64(u.size), 'f', -1, 64) + " " + u.name
		}
	}
	return Count(n) + " bytes"
}

// Count writes an integer with thousands separators: 12,000.
func Count[T ~int | ~int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// Duration writes a bound of time without trailing zero units: "30s",
// "10m", "1h30m".
func Duration(d time.Duration) string {
	s := d.String()
	for _, z := range []string{"m0s", "h0m"} {
		if len(s) > len(z) && s[len(s)-len(z):] == z {
			s = s[:len(s)-len(z)+1]
		}
	}
	return s
}
