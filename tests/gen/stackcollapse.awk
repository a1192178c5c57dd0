#!/usr/bin/awk -f
# stackcollapse.awk — fold `perf script` text (with -g call chains) into
# collapsed stacks: "comm;root;...;leaf COUNT", one line per distinct stack,
# counting samples (not periods). Like FlameGraph's stackcollapse-perf.pl
# with default options, minus its inlining/annotation options:
#   header   "comm  pid  time:  period event:"   starts a sample
#   frames   "\taddr symbol+0xoff (dso)"          leaf first
#   blank line                                    ends the sample
# Symbols keep their text; "+0x..." offsets and the "(dso)" are removed.
function flush() {
	if (insample) {
		count[stack]++
		insample = 0
	}
}
/^#/ { next }
/^[ \t]*$/ { flush(); next }
/^[^ \t]/ {
	flush()
	line = $0
	if (match(line, /[ \t]+[0-9]+(\/[0-9]+)?[ \t]+/))
		comm = substr(line, 1, RSTART - 1)
	else
		comm = $1
	stack = comm
	frames = ""
	insample = 1
	next
}
{
	if (!insample)
		next
	sym = $0
	sub(/^[ \t]+[0-9a-fA-F]+[ \t]+/, "", sym)  # address
	sub(/[ \t]+\([^()]*\)$/, "", sym)          # (dso)
	sub(/\+0x[0-9a-fA-F]+$/, "", sym)          # offset
	if (sym == "")
		sym = "[unknown]"
	# frames arrive leaf first: prepend below the comm
	frames = (frames == "") ? sym : sym ";" frames
	stack = comm ";" frames
}
END {
	flush()
	for (s in count)
		print s, count[s]
}
