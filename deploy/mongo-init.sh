#!/bin/bash
# Run once by the mongo image on an empty volume (docker-entrypoint-initdb.d), authenticated as
# MONGO_INITDB_ROOT_USERNAME: creates the catalogue's own user, which may read and write its
# database and nothing else (docs/security.md). "${mongo[@]}" is the image's own shell command.
set -euo pipefail
for value in "$MONGO_APP_USER" "$MONGO_APP_PASSWORD"; do
	# Written into the URI and into JavaScript below: letters, digits, . _ - only (openssl rand -hex).
	[[ "$value" =~ ^[A-Za-z0-9._-]+$ ]] || { echo "MONGO_APP_USER and MONGO_APP_PASSWORD: letters, digits, . _ - only" >&2; exit 1; }
done
"${mongo[@]}" "$MONGO_INITDB_DATABASE" <<EOJS
db.createUser({ user: "$MONGO_APP_USER", pwd: "$MONGO_APP_PASSWORD", roles: [{ role: "readWrite", db: "$MONGO_INITDB_DATABASE" }] });
EOJS
