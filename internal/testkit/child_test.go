package testkit

import (
	"bufio"
	"os"
	"testing"
)

const childEnv = "CAPKIT_TESTKIT_CHILD"

// TestChildBody is the child of TestChild; it does nothing in a normal run.
func TestChildBody(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "":
		t.Skip("child of TestChild")
	case "exit":
		os.Stdout.WriteString("done\n")
	case "block":
		os.Stdout.WriteString("ready\n")
		select {}
	}
}

func TestChild(t *testing.T) {
	c := StartChild(t, "TestChildBody", childEnv+"=block")
	if line, _ := bufio.NewReader(c.Stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("child said %q", line)
	}
	c.Kill(t)
	if killed, err := c.Wait(); !killed || err == nil {
		t.Fatalf("killed %v, err %v", killed, err)
	}

	c = StartChild(t, "TestChildBody", childEnv+"=exit")
	if line, _ := bufio.NewReader(c.Stdout).ReadString('\n'); line != "done\n" {
		t.Fatalf("child said %q", line)
	}
	if killed, err := c.Wait(); killed || err != nil {
		t.Fatalf("killed %v, err %v", killed, err)
	}
	c.Kill(t) // after it exited: not an error
}
