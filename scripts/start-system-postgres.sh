#!/usr/bin/env bash
# Starts a throw-away cluster of the system's PostgreSQL (Debian's `postgresql` package, installed by apt
# when missing) on a free loopback port, and prints its URL. CI runs the whole test suite a second time
# against it (TEST_DATABASE_URL), so every release from 14 up is covered beside the embedded 18.
#   url=$(bash scripts/start-system-postgres.sh DIR) && TEST_DATABASE_URL=$url npm test
#   bash scripts/start-system-postgres.sh --stop DIR
set -euo pipefail
run() { su postgres -s /bin/sh -c "$*"; }
if [ "${1:-}" = "--stop" ]; then
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  run "'$bin/pg_ctl' -D '$2/data' -m fast stop" >/dev/null
  exit 0
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
dir=${1:-$(mktemp -d /tmp/pis-system-pg-XXXXXX)}
mkdir -p "$dir"
chmod 755 "$dir"
chown postgres "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
printf '%s\n' "$password" > "$dir/pwfile"
chown postgres "$dir/pwfile"
# Quiet unless something fails: then the whole set-up log goes to stderr.
quiet() { "$@" >>"$dir/setup.log" 2>&1 || { cat "$dir/setup.log" >&2; exit 1; }; }
quiet run "'$bin/initdb' -D '$dir/data' -U postgres --pwfile='$dir/pwfile' --auth=scram-sha-256 --encoding=UTF8 --locale=C"
rm -f "$dir/pwfile"
quiet run "'$bin/pg_ctl' -D '$dir/data' -l '$dir/log' -w -o \"-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories='$dir'\" start"
echo "postgres://postgres:$password@127.0.0.1:$port/postgres"
