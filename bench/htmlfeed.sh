#!/usr/bin/env bash
# HTML and feed readers beside the libraries they are built on, from the Go
# benchmarks of htmldoc and feed, on the same generated inputs:
#   - htmldoc.Parse (text and article selections) of a 1 MiB article page
#     vs golang.org/x/net/html.Parse (an unbounded tree, no text) and the
#     bare x/net/html tokenizer;
#   - feed.Parse of a 1 MiB RSS 2.0 feed of 1,000 items vs encoding/xml
#     Unmarshal into a typed struct and the bare xml.Decoder token stream.
# The benchmarks alternate, COUNT rounds of 20 iterations each (the machine
# is shared, so load drifts); the median MB/s is kept, and ratios are
# capkit's throughput / the baseline's (1.0 = as fast).
#
# Usage: bash bench/htmlfeed.sh        (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
COUNT=${COUNT:-5}
out=$(mktemp)
trap 'rm -f "$out" "$out.h" "$out.f"' EXIT
go test -c -o "$out.h" ./parse/htmldoc
go test -c -o "$out.f" ./parse/feed
for _ in $(seq "$COUNT"); do
	for b in ParseText ParseArticle BaselineHTMLParse BaselineTokenizer; do
		(cd htmldoc && "$out.h" -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime 20x) | sed "s/^Benchmark/BenchmarkHTML/" >>"$out"
	done
	for b in Parse BaselineUnmarshal BaselineTokens; do
		(cd feed && "$out.f" -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime 20x) | sed "s/^Benchmark/BenchmarkFeed/" >>"$out"
	done
done
# The MB/s column is the one before "MB/s".
med() { grep "^Benchmark$1-" "$out" | awk '{for (i = 2; i <= NF; i++) if ($i == "MB/s") print $(i-1)}' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
ht=$(med HTMLParseText) ha=$(med HTMLParseArticle) hp=$(med HTMLBaselineHTMLParse) hz=$(med HTMLBaselineTokenizer)
fp=$(med FeedParse) fu=$(med FeedBaselineUnmarshal) fz=$(med FeedBaselineTokens)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); go: $(go version | cut -d' ' -f3); count: $COUNT (median)"
printf '| operation | capkit | baseline | ratio (capkit/baseline) |\n|---|---|---|---|\n'
printf '| HTML: htmldoc.Parse text vs html.Parse | %s MB/s | %s MB/s | %s |\n' "$ht" "$hp" "$(ratio "$ht" "$hp")"
printf '| HTML: htmldoc.Parse article vs html.Parse | %s MB/s | %s MB/s | %s |\n' "$ha" "$hp" "$(ratio "$ha" "$hp")"
printf '| HTML: htmldoc.Parse text vs tokenizer alone | %s MB/s | %s MB/s | %s |\n' "$ht" "$hz" "$(ratio "$ht" "$hz")"
printf '| Feed: feed.Parse vs xml.Unmarshal (typed) | %s MB/s | %s MB/s | %s |\n' "$fp" "$fu" "$(ratio "$fp" "$fu")"
printf '| Feed: feed.Parse vs xml.Decoder.Token alone | %s MB/s | %s MB/s | %s |\n' "$fp" "$fz" "$(ratio "$fp" "$fz")"
