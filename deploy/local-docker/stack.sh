#!/usr/bin/env bash
# The project's docker-compose.yml, run on this machine's own engine (engine.sh) with the stand-in
# images (stand-ins.sh) and the SQLite override (compose.sqlite.yml): deploy/local-docker/README.md.
#   stack.sh up            engine, stand-ins, the image built from the Dockerfile, `up -d`
#   stack.sh prepare       all of `up` but `up -d`: for a test that watches the start itself
#   stack.sh down          the stack and its volumes removed, the engine stopped by its PID
#   stack.sh compose ARGS  docker-compose with the same files, environment file and engine
# STACK_ENV_FILE names the environment file (default .env: copy .env.example and set its credentials).
# A failure of `up` names its step; the failing command's own output is above it.
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
here=deploy/local-docker
env_file="${STACK_ENV_FILE:-.env}"
export DOCKER_HOST
DOCKER_HOST="$(bash $here/engine.sh host)"

compose() {
	[ -f "$env_file" ] || { echo "stack: no $env_file: copy .env.example and set its credentials" >&2; exit 1; }
	docker-compose --env-file "$env_file" -f docker-compose.yml -f $here/compose.sqlite.yml "$@"
}

case "${1:-}" in
	up | prepare)
		trap 'echo "stack: FAILED while $step" >&2' ERR
		# The machine's proxy settings: apt and debootstrap's wget read only the lower-case names; the
		# image build gets both as build arguments (docker takes each --build-arg NAME from this
		# environment, and skips those that are unset).
		proxies=()
		for name in HTTP_PROXY HTTPS_PROXY NO_PROXY; do
			lower="${name,,}"
			if [ -n "${!name:-}" ] && [ -z "${!lower:-}" ]; then export "$lower=${!name}"; fi
			proxies+=(--build-arg "$name" --build-arg "$lower")
		done
		step="starting the engine (engine.sh start)"
		bash $here/engine.sh start
		step="making the stand-in images (stand-ins.sh)"
		bash $here/stand-ins.sh
		echo "stack: MongoDB cannot run here (no registry reachable carries it): the catalogue nodes keep SQLite databases on a volume each ($here/compose.sqlite.yml)"
		# On the host's network: this engine runs without iptables, so its bridge has no route out,
		# and npm install needs the registry. The nodes themselves run on compose's bridge network.
		echo "stack: building game-catalogue:local from the Dockerfile"
		step="building game-catalogue:local from the Dockerfile (docker build)"
		DOCKER_BUILDKIT=0 docker build --network host "${proxies[@]}" -t game-catalogue:local .
		# A leftover of a run that was killed is removed first, volumes included.
		compose down --volumes --remove-orphans >/dev/null 2>&1 || true
		[ "$1" = up ] || exit 0
		step="starting the stack (docker-compose up -d)"
		compose up -d
		;;
	down)
		if docker version >/dev/null 2>&1; then compose down --volumes --remove-orphans || true; fi
		bash $here/engine.sh stop
		;;
	compose)
		shift
		compose "$@"
		;;
	*)
		echo "usage: $0 up|prepare|down|compose ARGS" >&2
		exit 2
		;;
esac
