# Sourced by the benchmark scripts: machine_line prints what a figure was
# measured on (the CPU model and every flag it reports, the cores, the Go
# version and the load average), so that bench/RESULTS.md can keep the
# figures of every machine apart.
machine_line() {
	awk -F': ' '
		/^model name/ && model == "" { model = $2 }
		/^flags/ && flags == "" { flags = $2 }
		END { printf "cpu: %s\nflags: %s\n", model, flags }' /proc/cpuinfo
	echo "cores: $(nproc); $(go version 2>/dev/null | cut -d' ' -f3); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# load_line prints the load average, for the end of a run.
load_line() {
	echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
}
