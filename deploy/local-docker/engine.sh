#!/usr/bin/env bash
# A Docker engine of the project's own, for the compose stack's tests on a machine with root and
# Debian's packages (deploy/local-docker/README.md). Everything it keeps lives under
# CATALOGUE_DOCKER_ROOT (default /var/lib/game-catalogue-docker, outside any clone, so images and
# build layers are kept between runs): the data root, the exec root, the socket and the PID file.
#   engine.sh start   installs docker.io, docker-compose and debootstrap if missing, starts dockerd
#                     (vfs storage, no iptables), waits until it answers
#   engine.sh stop    stops that dockerd by its PID, and with it its containerd and containers
#   engine.sh host    prints its DOCKER_HOST
set -euo pipefail

root="${CATALOGUE_DOCKER_ROOT:-/var/lib/game-catalogue-docker}"
socket="$root/docker.sock"
pidfile="$root/dockerd.pid"
log="$root/dockerd.log"
host="unix://$socket"

say() { echo "engine: $*"; }
# Whether the PID file names a running dockerd: after a crash or a reboot its number may be another process's.
alive() { [ -s "$pidfile" ] && [ "$(cat "/proc/$(cat "$pidfile")/comm" 2>/dev/null)" = dockerd ]; }

install() {
	local missing=()
	command -v dockerd >/dev/null || missing+=(docker.io)
	command -v docker-compose >/dev/null || missing+=(docker-compose)
	command -v debootstrap >/dev/null || missing+=(debootstrap)
	[ ${#missing[@]} -eq 0 ] && return
	[ "$(id -u)" -eq 0 ] || { say "needs root to install ${missing[*]}" >&2; exit 1; }
	say "installing Debian's ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# What is still mounted under dockerd's exec root, deepest first.
leftovers() { awk -v under="$root/exec/" 'index($2, under) == 1 { print $2 }' /proc/self/mounts | sort -r; }

stop() {
	if alive; then
		local pid
		pid="$(cat "$pidfile")"
		say "stopping dockerd (PID $pid)"
		kill "$pid"
		# dockerd stops its containers and the containerd it started before it exits.
		for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
		if kill -0 "$pid" 2>/dev/null; then
			say "dockerd (PID $pid) did not stop within 30 s: killing it" >&2
			kill -KILL "$pid"
			while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
		fi
	fi
	rm -f "$pidfile"
	# dockerd leaves the host network's namespace mounted at exec/netns/default (a killed one may
	# leave more), which keeps the folder from being removed: undone once dockerd is gone.
	local mount
	while IFS= read -r mount; do
		umount "$mount" || umount --lazy "$mount"
		say "unmounted $mount, left by dockerd"
	done < <(leftovers)
}

start() {
	[ "$(id -u)" -eq 0 ] || { say "dockerd needs root here; run as root" >&2; exit 1; }
	install
	# One left running by a run that was killed: stop it, so this run starts from a known state.
	stop
	mkdir -p "$root/data" "$root/exec"
	say "starting dockerd: data root $root/data, socket $socket, log $log"
	setsid dockerd --storage-driver vfs --iptables=false --ip6tables=false \
		--data-root "$root/data" --exec-root "$root/exec" -H "$host" --pidfile "$pidfile" \
		>"$log" 2>&1 </dev/null &
	for _ in $(seq 1 120); do
		DOCKER_HOST="$host" docker version >/dev/null 2>&1 && { say "dockerd answers (PID $(cat "$pidfile"))"; return; }
		sleep 0.5
	done
	say "dockerd did not answer within 60 s; the end of $log:" >&2
	tail -20 "$log" >&2
	exit 1
}

case "${1:-}" in
	start) start ;;
	stop) stop ;;
	host) echo "$host" ;;
	*) echo "usage: $0 start|stop|host" >&2; exit 2 ;;
esac
