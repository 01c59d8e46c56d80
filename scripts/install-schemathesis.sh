#!/usr/bin/env bash
# Installs schemathesis, pinned, from PyPI into .schemathesis/venv (git-ignored), as install-temporal.sh installs
# Temporal: the contract test (test/contract/schemathesis.test.ts) runs .schemathesis/venv/bin/schemathesis and
# fails, never skips, when it is missing. Its dependencies are pinned too (scripts/schemathesis-constraints.txt),
# so hypothesis generates the same cases from the same seed on every machine.
set -euo pipefail
cd "$(dirname "$0")/.."
SCHEMATHESIS_VERSION=4.32.5
venv=.schemathesis/venv
if [ -x "$venv/bin/schemathesis" ] \
  && "$venv/bin/pip" show schemathesis 2>/dev/null | grep -x "Version: $SCHEMATHESIS_VERSION" >/dev/null; then
  echo "schemathesis $SCHEMATHESIS_VERSION already installed in $venv"
  exit 0
fi
# 3.11 where there are several (the wheels' floor is 3.10); any python3 otherwise.
python=$(command -v python3.11 || command -v python3)
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check \
  --constraint scripts/schemathesis-constraints.txt "schemathesis==$SCHEMATHESIS_VERSION"
"$venv/bin/schemathesis" --version
echo "schemathesis installed in $venv"
