#!/usr/bin/env bash
# Installs what polyphony needs on a Debian/Ubuntu machine, from the project's own files:
#   system programs (Debian packages): ffmpeg (decode), fpcalc (Chromaprint), and for the tests
#   supysonic + waitress (a real Subsonic server), wesnoth-1.16-music (real music), chromium (UI tests),
#   python3-numpy (independent reference for the mel front end), espeak-ng (speech clips: search by recording
#   must answer "no match" for them);
#   Node packages: npm ci from package-lock.json;
#   learned-model files: MusiCNN MSD and MTT weights into $MODELS_DIR/musicnn (default ./data/models, the
#   standalone default <DATA_DIR>/models), from upstream musicnn_keras at a pinned commit, sha256-checked.
#   Without network it says so once and continues (the service then runs without tags).
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME_PKGS=(ffmpeg libchromaprint-tools)
TEST_PKGS=(supysonic python3-waitress wesnoth-1.16-music chromium python3-numpy espeak-ng)
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

# onnxruntime-node runs MusiCNN from the CPU library inside its npm package; its postinstall would also
# fetch the CUDA provider from outside the npm registry (unused here), so it is skipped.
if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund
fi

# MusiCNN weights (data, never committed): github.com/Quint-e/musicnn_keras, musicnn_keras/keras_checkpoints/.
MODELS_DIR="${MODELS_DIR:-${DATA_DIR:-./data}/models}"
MUSICNN_COMMIT=8e2d042f3a7bc560f825626144ae0f4ee20199ae
MUSICNN_BASE="https://raw.githubusercontent.com/Quint-e/musicnn_keras/${MUSICNN_COMMIT}/musicnn_keras/keras_checkpoints"
declare -A MUSICNN_SHA256=(
  [MSD_musicnn.h5]=412a832c8527a813e084ba6f2cc7d068ecbbf1b68bda8c1de2e7de0d1f5fe7d1
  [MTT_musicnn.h5]=1a66a2e58e862e894c088bd7789b05874becf994f275c54d9575dab83fab4ebe
)
mkdir -p "$MODELS_DIR/musicnn"
for f in MSD_musicnn.h5 MTT_musicnn.h5; do
  target="$MODELS_DIR/musicnn/$f"
  want="${MUSICNN_SHA256[$f]}"
  if [[ -f "$target" ]]; then
    have=$(sha256sum "$target" | cut -d' ' -f1)
    if [[ "$have" == "$want" ]]; then continue; fi
    echo "$target has sha256 $have, expected $want: replacing it" >&2
  fi
  tmp="$target.part"
  if ! curl -fsSL --connect-timeout 10 --max-time 120 -o "$tmp" "$MUSICNN_BASE/$f"; then
    rm -f "$tmp"
    echo "No network (or upstream unavailable): MusiCNN weights not fetched into $MODELS_DIR/musicnn; continuing without tags. Place $f there (sha256 $want) to enable them."
    break
  fi
  have=$(sha256sum "$tmp" | cut -d' ' -f1)
  if [[ "$have" != "$want" ]]; then
    rm -f "$tmp"
    echo "Downloaded $f has sha256 $have, expected $want: not installed" >&2
    exit 1
  fi
  mv "$tmp" "$target"
  echo "Installed $target"
done
