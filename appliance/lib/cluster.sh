# shellcheck shell=bash
# appliance/lib/cluster.sh — shared by appliance/up, down, ctl and demo
# (sourced, not run). Knows the process table of a local cluster (clickhouse,
# hub, edge1..edgeK; with --cluster also zookeeper, clickhouse2..4 and hub2), how to start, health-check and stop each one, and how
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
ENV_ORDER=(WT_DIR WT_HUB_URL WT_HUB_URLS WT_EDGE_URLS WT_ADMIN_TOKEN WT_PROJECT WT_UPLOAD_TOKEN
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
	if [[ ${ENV[WT_CLUSTER]:-0} == 1 ]]; then
		echo zookeeper; echo clickhouse; echo clickhouse2; echo clickhouse3; echo clickhouse4
		echo hub; echo hub2
	else
		echo clickhouse; echo hub
	fi
	for ((k = 1; k <= n; k++)); do echo "edge$k"; done
}
valid_name() { local n; for n in $(proc_names); do [[ $n == "$1" ]] && return 0; done; return 1; }
upper() { echo "${1^^}"; }

# Ports: the table in docs/operations.md "## Local cluster".
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
	if [[ ${ENV[WT_CLUSTER]:-0} == 1 ]]; then
		# --cluster: ZooKeeper N+5; clickhouse2..4 and hub2 from N+100
		# (docs/operations.md). Without a base: ZooKeeper 2181, ClickHouse 8124.., hub2 8081.
		local c x=${b:-}
		if [[ -z $x ]]; then
			env_set WT_PORT_ZOOKEEPER 2181
			for c in 2 3 4; do
				env_set WT_PORT_CLICKHOUSE${c}_HTTP $((8121 + c)); env_set WT_PORT_CLICKHOUSE${c}_TCP $((8998 + c))
				env_set WT_PORT_CLICKHOUSE${c}_INTERSERVER $((9007 + c))
			done
			env_set WT_PORT_HUB2 8081; env_set WT_PORT_HUB2_REPL 8444
		else
			env_set WT_PORT_ZOOKEEPER $((x + 5))
			for c in 2 3 4; do
				env_set WT_PORT_CLICKHOUSE${c}_HTTP $((x + 100 + 3 * (c - 2)))
				env_set WT_PORT_CLICKHOUSE${c}_TCP $((x + 101 + 3 * (c - 2)))
				env_set WT_PORT_CLICKHOUSE${c}_INTERSERVER $((x + 102 + 3 * (c - 2)))
			done
			env_set WT_PORT_HUB2 $((x + 110)); env_set WT_PORT_HUB2_REPL $((x + 111))
		fi
		for c in 2 3 4; do
			env_set WT_CLICKHOUSE${c}_URL "http://127.0.0.1:${ENV[WT_PORT_CLICKHOUSE${c}_HTTP]}"
		done
		env_set WT_HUB2_URL "http://127.0.0.1:${ENV[WT_PORT_HUB2]}"
		env_set WT_HUB_URLS "http://127.0.0.1:${ENV[WT_PORT_HUB]} ${ENV[WT_HUB2_URL]}"
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
	local u; u=$(upper "$1")
	case $1 in
	zookeeper) echo "${ENV[WT_PORT_ZOOKEEPER]}" ;;
	clickhouse*) echo "${ENV[WT_PORT_${u}_HTTP]} ${ENV[WT_PORT_${u}_TCP]} ${ENV[WT_PORT_${u}_INTERSERVER]}" ;;
	hub) echo "${ENV[WT_PORT_HUB]}" ;;
	hub2) echo "${ENV[WT_PORT_HUB2]}" ;;
	edge*) local u; u=$(upper "$1"); echo "${ENV[WT_PORT_${u}_HTTP]}" ;;
	esac
}

proc_health_url() {
	local u; u=$(upper "$1")
	case $1 in
	zookeeper) echo "zk://127.0.0.1:${ENV[WT_PORT_ZOOKEEPER]}" ;;
	clickhouse*) echo "${ENV[WT_${u}_URL]}/ping" ;;
	hub*) echo "${ENV[WT_${u}_URL]}/healthz" ;;
	edge*) local u; u=$(upper "$1"); echo "${ENV[WT_${u}_URL]}/healthz" ;;
	esac
}

proc_binary() { # NAME → the executable we start (its hash is the build stamp)
	case $1 in
	clickhouse* | zookeeper) echo "" ;;
	hub*) echo "$WT_BIN/wt-hub" ;;
	edge*) echo "$WT_BIN/wt-edge" ;;
	esac
}

proc_log() { # NAME → where its output goes
	case $1 in
	clickhouse*) echo "$WT_DIR/$1/log/" ;;
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

healthy() { # URL; zk://H:P = ZooKeeper answers "srvr" as a serving member
	if [[ $1 == zk://* ]]; then
		local hp=${1#zk://}
		(exec 3<>"/dev/tcp/${hp%:*}/${hp#*:}" && echo srvr >&3 && timeout 2 grep -q '^Mode' <&3) 2>/dev/null
		return
	fi
	curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null
}

# The XML that makes clickhouse[N] a member of cluster "wt": 2 shards x 2
# replicas, clickhouse + clickhouse2 = shard 1, clickhouse3 + 4 = shard 2.
cluster_xml() { # NAME
	local i=${1#clickhouse} hosts=
	i=${i:-1}
	hosts="127.0.0.1:${ENV[WT_PORT_CLICKHOUSE_TCP]}"
	for c in 2 3 4; do hosts+=",127.0.0.1:${ENV[WT_PORT_CLICKHOUSE${c}_TCP]}"; done
	"$WT_ROOT/appliance/clickhouse/cluster-config" --name wt --hosts "$hosts" --replicas 2 \
		--zookeeper "127.0.0.1:${ENV[WT_PORT_ZOOKEEPER]}" --shard $(((i - 1) / 2 + 1)) --replica $(((i - 1) % 2 + 1))
}

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
	zookeeper)
		# Debian's zookeeper 3.8, started directly (docs/operations.md "## Scale out")
		local zd=$WT_DIR/zookeeper
		mkdir -p "$zd/data"
		printf '%s\n' "tickTime=1000" "initLimit=10" "syncLimit=5" "dataDir=$zd/data" \
			"clientPort=${ENV[WT_PORT_ZOOKEEPER]}" "clientPortAddress=127.0.0.1" \
			"admin.enableServer=false" >"$zd/zoo.cfg"
		echo "=== $(date -u +%FT%TZ) appliance: starting zookeeper" >>"$log"
		setsid java -Xmx256m "-Dzookeeper.log.dir=$zd" -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
			org.apache.zookeeper.server.quorum.QuorumPeerMain "$zd/zoo.cfg" </dev/null >>"$log" 2>&1 9>&- &
		pid=$!
		;;
	clickhouse*)
		local cd=$WT_DIR/$name extra=()
		mkdir -p "$cd"
		rm -f "$cd/clickhouse.pid"
		if [[ ${ENV[WT_CLUSTER]:-0} == 1 ]]; then
			cluster_xml "$name" >"$cd/cluster.xml" || { note "$name: cannot write $cd/cluster.xml"; return 1; }
			extra=(--extra-config "$cd/cluster.xml")
		fi
		if ! pid=$("$WT_ROOT/appliance/clickhouse/start-private" --dir "$cd" \
			--http-port "${ENV[WT_PORT_${u}_HTTP]}" --tcp-port "${ENV[WT_PORT_${u}_TCP]}" \
			--interserver-port "${ENV[WT_PORT_${u}_INTERSERVER]}" "${extra[@]}" \
			2>"$cd/start.log" 9>&-); then
			note "$name did not come up; see $cd/start.log and $log"
			sed 's/^/    /' "$cd/start.log" >&2
			return 1
		fi
		;;
	hub* | edge*)
		bin=$(proc_binary "$name")
		local cfg=$WT_DIR/$name/$([[ $name == hub* ]] && echo hub.cfg || echo edge.cfg)
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
			if [[ $name != clickhouse* ]]; then wait "$pid" 2>/dev/null; status=" with status $?"; fi
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
	[[ $name == clickhouse* ]] && rm -f "$WT_DIR/$name/clickhouse.pid"
	proc_clear "$name"
	env_write "$WT_DIR"
	note "$name stopped (SIG$sig, pid $pid)"
}
