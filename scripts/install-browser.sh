#!/usr/bin/env bash
# The browser of the browser test (tests/experiments/test_report_browser.py): Debian's chromium
# and chromium-driver (chromedriver), installed with apt-get when they are missing and this runs
# as root (as CI does). Otherwise it only says that the test will skip. Never fails the set-up:
# the test itself fails in CI when the browser is still missing.
# ROBUSTSAFE_NO_BROWSER=1 skips this step.
set -uo pipefail
have() { command -v "$1" >/dev/null 2>&1; }
if have chromedriver && { have chromium || have chromium-browser || have google-chrome; }; then
  exit 0
fi
[ -z "${ROBUSTSAFE_NO_BROWSER:-}" ] || exit 0
if [ "$(id -u)" != 0 ] || ! have apt-get; then
  echo "note: no Chromium/chromedriver: the browser test will skip (as root, scripts/install-browser.sh installs Debian's chromium and chromium-driver)"
  exit 0
fi
apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1
}
# the package lists may be missing or stale on a fresh machine: update once and retry
if apt_install || { apt-get update -qq >/dev/null 2>&1 && apt_install; }; then
  echo "Chromium and chromedriver installed (Debian packages chromium, chromium-driver) for the browser test"
else
  echo "note: apt-get could not install chromium and chromium-driver: the browser test will skip (fail in CI)" >&2
fi
exit 0
