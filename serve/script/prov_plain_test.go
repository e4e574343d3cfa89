package script

import "testing"

// An operation of literals and of a loop variable that provably holds no
// label runs natively; wherever the variable may hold one (read after the
// loop, in a function or comprehension that may run later, bound again,
// a parameter, a loop over anything but a range of plain operands), the
// operation goes through its helper.
func TestRewritePlainOperations(t *testing.T) {
	for _, c := range []struct {
		name, src string
		helpers   int // $bin and $un calls left
	}{
		{"literals", "x = -1 + 2 * 3\n", 0},
		{"a range's variable in its body", "for i in range(10):\n  x = 'a%d' % i\n  y = -(i + 1)\n", 0},
		{"within a function", "def f():\n  for i in range(3):\n    x = i * 2\n", 0},
		{"nested loops", "for i in range(3):\n  for j in range(i + 1):\n    x = i * j\n", 0},
		{"after the loop", "for i in range(10):\n  pass\nx = i + 1\n", 1},
		{"in a lambda", "for i in range(10):\n  f = lambda: i + 1\n", 1},
		{"in a function defined in the body", "for i in range(10):\n  def f():\n    return i + 1\n", 1},
		{"in a comprehension", "for i in range(10):\n  y = [i + 1 for k in range(2)]\n", 1},
		{"bound again", "for i in range(10):\n  x = i + 1\ni = 0\n", 1},
		{"bound twice by loops", "for i in range(10):\n  x = i + 1\nfor i in range(3):\n  pass\n", 1},
		{"a parameter", "def f(i):\n  for i in range(3):\n    x = i + 1\n", 1},
		{"captured", "def f():\n  for i in range(3):\n    x = i + 1\n  return lambda: i\n", 1},
		{"a range of a variable", "n = 3\nfor i in range(n):\n  x = i + 1\n", 1},
		{"a list", "for i in [1, 2]:\n  x = i + 1\n", 1},
		{"range shadowed", "def range(n):\n  return [n]\nfor i in range(3):\n  x = i + 1\n", 1},
		{"a variable bound in the body", "for i in range(3):\n  y = 1\n  x = y + 1\n", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := helperCalls(t, c.src)
			if n != c.helpers {
				t.Fatalf("%d helper calls left, want %d", n, c.helpers)
			}
		})
	}
}
