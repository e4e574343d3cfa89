package budget

import (
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Instant is a reading of two clocks: the wall clock, which a person or NTP
// can move, and the time since boot (CLOCK_BOOTTIME, which counts suspend
// and never jumps) tagged with the boot it belongs to.
type Instant struct {
	Wall   time.Time
	BootID string
	Boot   time.Duration
}

// Clock reads the time. Tests inject one to move either clock.
type Clock func() Instant

var (
	bootOnce sync.Once
	bootID   string
)

// SystemClock reads the wall clock, CLOCK_BOOTTIME and the kernel's boot
// identity. Without a boot identity, only the wall clock counts.
func SystemClock() Instant {
	bootOnce.Do(func() {
		if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
			bootID = strings.TrimSpace(string(b))
		}
	})
	in := Instant{Wall: time.Now(), BootID: bootID}
	var ts unix.Timespec
	if bootID != "" && unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) == nil {
		in.Boot = time.Duration(ts.Nano())
	} else {
		in.BootID = ""
	}
	return in
}

// deadline is a moment stored on both clocks. It is reached only when both
// readings have passed it (the boot reading only within the same boot), so
// neither a wall-clock jump nor a restart shortens a wait; a backward wall
// jump can lengthen one. After a reboot the boot reading no longer
// applies and the wall clock alone decides.
type deadline struct {
	Wall   int64  `json:"wall_unix_nano"`
	BootID string `json:"boot_id,omitempty"`
	Boot   int64  `json:"boot_nano,omitempty"`
}

// after is the deadline d from now.
func after(now Instant, d time.Duration) deadline {
	return deadline{Wall: now.Wall.UnixNano() + int64(d), BootID: now.BootID, Boot: int64(now.Boot + d)}
}

// set reports whether d names a moment.
func (d deadline) set() bool { return d.Wall != 0 }

// remaining is how long until d is reached, zero when it has been.
func (d deadline) remaining(now Instant) time.Duration {
	if !d.set() {
		return 0
	}
	r := d.Wall - now.Wall.UnixNano()
	if d.BootID != "" && d.BootID == now.BootID {
		r = max(r, d.Boot-int64(now.Boot))
	}
	return time.Duration(max(r, 0))
}

// later returns whichever of a and b is further away from now.
func later(now Instant, a, b deadline) deadline {
	if b.remaining(now) > a.remaining(now) {
		return b
	}
	return a
}
