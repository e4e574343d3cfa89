package sandbox

const probeArg = "__probe"

func probe(args []string) int { return 0 }
