#!/usr/bin/env bash
# Installs what polyphony needs on a Debian/Ubuntu machine, from the project's own files:
#   system programs (Debian packages): ffmpeg (decode), fpcalc (Chromaprint), and for the tests
#   supysonic + waitress (a real Subsonic server), wesnoth-1.16-music (real music), chromium (UI tests),
#   python3-numpy (independent reference for the mel front end);
#   Node packages: npm ci from package-lock.json.
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME_PKGS=(ffmpeg libchromaprint-tools)
TEST_PKGS=(supysonic python3-waitress wesnoth-1.16-music chromium python3-numpy)
WANT=("${RUNTIME_PKGS[@]}")
if [[ "${1:-}" != "--runtime-only" ]]; then WANT+=("${TEST_PKGS[@]}"); fi

missing=()
for p in "${WANT[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if ((${#missing[@]})); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "Installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund
fi
