# shellcheck shell=bash
# appliance/lib/cluster.sh — shared by appliance/up, down, ctl and demo
# (sourced, not run). Knows the process table of a local cluster (clickhouse,
# hub, edge1..edgeK), how to start, health-check and stop each one, and how
# to read and write DIR/env atomically under DIR/.lock.
#
# DIR/env is shell syntax, one KEY='value' per line; it is the only state.
# A process counts as "ours" only while /proc/PID/exe still points at the
# executable recorded when it started (also after that file was replaced by
# a rebuild: "(deleted)"), so a recycled pid is never signalled.

WT_ROOT=${WT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${BUILD:-build}
WT_BIN=${WT_BIN:-$WT_ROOT/$BUILD/bin}
WT_START_TIMEOUT=${WT_START_TIMEOUT:-30}   # seconds a daemon gets to answer /healthz
WT_STOP_TIMEOUT=${WT_STOP_TIMEOUT:-30}     # seconds after SIGTERM before SIGKILL

declare -A ENV=()
ENV_ORDER=(WT_DIR WT_HUB_URL WT_EDGE_URLS WT_ADMIN_TOKEN WT_PROJECT WT_UPLOAD_TOKEN
	WT_READ_TOKEN WT_CLICKHOUSE_URL WT_EDGES WT_PORT_BASE WT_BUILD_STAMP)

die() { echo "${PROG:-appliance}: $*" >&2; exit 1; }
note() { echo "${PROG:-appliance}: $*" >&2; }

# ---- DIR/env -------------------------------------------------------------------
wt_lock() { # DIR — held until the script exits; children must not inherit fd 9
	exec 9>"$1/.lock"
	flock -w 120 9 || die "$1 is locked by another appliance command"
}

env_load() { # DIR
	ENV=()
	local f=$1/env line k v
	[[ -f $f ]] || return 0
	while IFS= read -r line; do
		[[ $line =~ ^([A-Z][A-Z0-9_]*)=\'([^\']*)\'$ ]] || continue
		ENV[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
	done <"$f"
}

env_set() { ENV[$1]=$2; }
env_get() { echo "${ENV[$1]:-}"; }

env_write() { # DIR — atomic replace
	local f=$1/env tmp=$1/env.tmp.$$ k
	declare -A written=()
	{
		echo "# Watchtower local cluster — written by appliance/up|ctl|down; do not edit."
		echo "# Source it: . $1/env"
		for k in "${ENV_ORDER[@]}"; do
			[[ -v ENV[$k] ]] || continue
			printf "%s='%s'\n" "$k" "${ENV[$k]}"
			written[$k]=1
		done
		for k in $(printf '%s\n' "${!ENV[@]}" | sort); do
			[[ -v written[$k] ]] && continue
			printf "%s='%s'\n" "$k" "${ENV[$k]}"
		done
	} >"$tmp"
	mv -f "$tmp" "$f"
}

# ---- process table ---------------------------------------------------------------
proc_names() { # all names, start order
	local k n=${ENV[WT_EDGES]:-0}
	echo clickhouse; echo hub
	for ((k = 1; k <= n; k++)); do echo "edge$k"; done
}
valid_name() { local n; for n in $(proc_names); do [[ $n == "$1" ]] && return 0; done; return 1; }
upper() { echo "${1^^}"; }

# Ports: SPEC §3 "Build and run".
ports_compute() { # uses ENV[WT_PORT_BASE] (empty = defaults) and ENV[WT_EDGES]
	local b=${ENV[WT_PORT_BASE]:-} k n=${ENV[WT_EDGES]}
	if [[ -z $b ]]; then
		env_set WT_PORT_HUB 8080; env_set WT_PORT_HUB_REPL 8443
		env_set WT_PORT_CLICKHOUSE_HTTP 8123; env_set WT_PORT_CLICKHOUSE_TCP 9000
		env_set WT_PORT_CLICKHOUSE_INTERSERVER 9009
		for ((k = 1; k <= n; k++)); do
			env_set WT_PORT_EDGE${k}_HTTP $((4040 + 10 * (k - 1)))
			env_set WT_PORT_EDGE${k}_OTLP_GRPC $((4317 + 10 * (k - 1)))
			env_set WT_PORT_EDGE${k}_OTLP_HTTP $((4318 + 10 * (k - 1)))
		done
	else
		env_set WT_PORT_HUB "$b"; env_set WT_PORT_HUB_REPL $((b + 1))
		env_set WT_PORT_CLICKHOUSE_HTTP $((b + 2)); env_set WT_PORT_CLICKHOUSE_TCP $((b + 3))
		env_set WT_PORT_CLICKHOUSE_INTERSERVER $((b + 4))
		for ((k = 1; k <= n; k++)); do
			env_set WT_PORT_EDGE${k}_HTTP $((b + 10 * k))
			env_set WT_PORT_EDGE${k}_OTLP_GRPC $((b + 10 * k + 1))
			env_set WT_PORT_EDGE${k}_OTLP_HTTP $((b + 10 * k + 2))
		done
	fi
	env_set WT_HUB_URL "http://127.0.0.1:${ENV[WT_PORT_HUB]}"
	env_set WT_CLICKHOUSE_URL "http://127.0.0.1:${ENV[WT_PORT_CLICKHOUSE_HTTP]}"
	local urls=()
	for ((k = 1; k <= n; k++)); do
		env_set WT_EDGE${k}_URL "http://127.0.0.1:${ENV[WT_PORT_EDGE${k}_HTTP]}"
		urls+=("http://127.0.0.1:${ENV[WT_PORT_EDGE${k}_HTTP]}")
	done
	env_set WT_EDGE_URLS "${urls[*]}"
}

proc_ports() { # NAME → the TCP ports it listens on
	case $1 in
	clickhouse) echo "${ENV[WT_PORT_CLICKHOUSE_HTTP]} ${ENV[WT_PORT_CLICKHOUSE_TCP]} ${ENV[WT_PORT_CLICKHOUSE_INTERSERVER]}" ;;
	hub) echo "${ENV[WT_PORT_HUB]}" ;;
	edge*) local u; u=$(upper "$1"); echo "${ENV[WT_PORT_${u}_HTTP]}" ;;
	esac
}

proc_health_url() {
	case $1 in
	clickhouse) echo "${ENV[WT_CLICKHOUSE_URL]}/ping" ;;
	hub) echo "${ENV[WT_HUB_URL]}/healthz" ;;
	edge*) local u; u=$(upper "$1"); echo "${ENV[WT_${u}_URL]}/healthz" ;;
	esac
}

proc_binary() { # NAME → the executable we start (its hash is the build stamp)
	case $1 in
	clickhouse) echo "" ;;
	hub) echo "$WT_BIN/wt-hub" ;;
	edge*) echo "$WT_BIN/wt-edge" ;;
	esac
}

proc_log() { # NAME → where its output goes
	case $1 in
	clickhouse) echo "$WT_DIR/clickhouse/log/" ;;
	*) echo "$WT_DIR/$1/log" ;;
	esac
}

file_hash() { sha256sum "$1" 2>/dev/null | cut -c1-16; }

build_stamp() {
	cat "$WT_BIN/wt-hub" "$WT_BIN/wt-edge" "$WT_BIN/wtctl" 2>/dev/null | sha256sum | cut -c1-16
}

# 0 when NAME's recorded pid is alive and still runs the recorded executable.
proc_alive() {
	local u pid exe cur
	u=$(upper "$1")
	pid=${ENV[WT_PID_$u]:-}
	exe=${ENV[WT_EXE_$u]:-}
	[[ -n $pid && -n $exe ]] || return 1
	cur=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
	[[ $cur == "$exe" || $cur == "$exe (deleted)" ]]
}

# 0 when NAME runs the binary that is in $WT_BIN now.
proc_current() {
	local u bin
	u=$(upper "$1")
	bin=$(proc_binary "$1")
	[[ -z $bin ]] && return 0
	[[ ${ENV[WT_STAMP_$u]:-} == "$(file_hash "$bin")" ]]
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

healthy() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }

proc_clear() { # NAME — forget its pid in ENV (caller writes env)
	local u; u=$(upper "$1")
	env_set WT_PID_$u ""
}

# Start NAME (not running) and wait for its health URL. Records pid, exe and
# stamp in ENV and writes DIR/env. Returns 1 with a message naming the log.
proc_start() {
	local name=$1 u pid bin log url p t0 status
	u=$(upper "$name")
	for p in $(proc_ports "$name"); do
		if port_in_use "$p"; then
			note "$name: port $p is already in use on 127.0.0.1 (another cluster? pick --port-base)"
			return 1
		fi
	done
	url=$(proc_health_url "$name")
	log=$(proc_log "$name")
	mkdir -p "$WT_DIR/$name"
	case $name in
	clickhouse)
		rm -f "$WT_DIR/clickhouse/clickhouse.pid"
		if ! pid=$("$WT_ROOT/appliance/clickhouse/start-private" --dir "$WT_DIR/clickhouse" \
			--http-port "${ENV[WT_PORT_CLICKHOUSE_HTTP]}" --tcp-port "${ENV[WT_PORT_CLICKHOUSE_TCP]}" \
			--interserver-port "${ENV[WT_PORT_CLICKHOUSE_INTERSERVER]}" \
			2>"$WT_DIR/clickhouse/start.log" 9>&-); then
			note "clickhouse did not come up; see $WT_DIR/clickhouse/start.log and $log"
			sed 's/^/    /' "$WT_DIR/clickhouse/start.log" >&2
			return 1
		fi
		;;
	hub | edge*)
		bin=$(proc_binary "$name")
		local cfg=$WT_DIR/$name/$([[ $name == hub ]] && echo hub.cfg || echo edge.cfg)
		[[ -x $bin ]] || { note "$name: $bin is missing (build failed?)"; return 1; }
		[[ -f $cfg ]] || { note "$name: $cfg is missing (run appliance/up)"; return 1; }
		echo "=== $(date -u +%FT%TZ) appliance: starting $bin --config $cfg" >>"$log"
		setsid "$bin" --config "$cfg" </dev/null >>"$log" 2>&1 9>&- &
		pid=$!
		;;
	esac
	t0=$SECONDS
	until healthy "$url"; do
		if ! kill -0 "$pid" 2>/dev/null || [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]]; then
			status=
			if [[ $name != clickhouse ]]; then wait "$pid" 2>/dev/null; status=" with status $?"; fi
			note "$name did not come up: the process exited$status; log: $log"
			[[ -f $log ]] && tail -n 15 "$log" | sed 's/^/    /' >&2
			return 1
		fi
		if ((SECONDS - t0 >= WT_START_TIMEOUT)); then
			note "$name did not come up: no answer from $url within ${WT_START_TIMEOUT}s (pid $pid left running, recorded in $WT_DIR/env); log: $log"
			[[ -f $log ]] && tail -n 15 "$log" | sed 's/^/    /' >&2
			env_set WT_PID_$u "$pid"
			env_set WT_EXE_$u "$(readlink "/proc/$pid/exe" 2>/dev/null)"
			env_write "$WT_DIR"
			return 1
		fi
		sleep 0.1
	done
	env_set WT_PID_$u "$pid"
	env_set WT_EXE_$u "$(readlink "/proc/$pid/exe")"
	[[ -n ${bin:-} ]] && env_set WT_STAMP_$u "$(file_hash "$bin")"
	env_write "$WT_DIR"
	note "$name up (pid $pid, $url)"
}

# Stop NAME with signal TERM (wait, then KILL after WT_STOP_TIMEOUT) or KILL.
proc_stop() {
	local name=$1 sig=${2:-TERM} u pid t0
	u=$(upper "$name")
	pid=${ENV[WT_PID_$u]:-}
	if ! proc_alive "$name"; then
		[[ -n $pid ]] && note "$name (pid $pid) is not running (or the pid now belongs to another program); not signalled"
		proc_clear "$name"
		env_write "$WT_DIR"
		return 0
	fi
	kill -"$sig" "$pid" 2>/dev/null || true
	t0=$SECONDS
	while proc_alive "$name"; do
		if [[ $sig == TERM ]] && ((SECONDS - t0 >= WT_STOP_TIMEOUT)); then
			note "$name (pid $pid) ignored SIGTERM for ${WT_STOP_TIMEOUT}s; sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			sig=KILL
		fi
		sleep 0.05
	done
	[[ $name == clickhouse ]] && rm -f "$WT_DIR/clickhouse/clickhouse.pid"
	proc_clear "$name"
	env_write "$WT_DIR"
	note "$name stopped (SIG$sig, pid $pid)"
}
