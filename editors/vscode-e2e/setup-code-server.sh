#!/bin/sh
# Finishes code-server's npm install without the network it assumes.
#
# code-server's own postinstall (node_modules/code-server/postinstall.sh)
# runs `npm install` in lib/vscode, whose packages then download ripgrep
# from GitHub (@vscode/ripgrep) and Node's headers from nodejs.org for the
# native modules (node-gyp). CI reaches only the package registries, so
# `npm ci` here skips install scripts (.npmrc) and this script does the same
# steps offline: VS Code's dependencies from the registry, pinned by its
# npm-shrinkwrap.json; the native modules built against the installed
# Node's headers (/usr/include/node, Debian's nodejs or NodeSource); Debian's
# ripgrep where @vscode/ripgrep would have put its download. Idempotent.
set -eu
cd "$(dirname "$0")/node_modules/code-server"
vscode=lib/vscode
if [ -e "$vscode/.bcode-setup-done" ]; then
  echo "code-server $(node -p 'require("./package.json").version') is set up already"
  exit 0
fi
rg=$(command -v rg || true)
[ -n "$rg" ] || { echo "ripgrep is missing: apt-get install ripgrep" >&2; exit 1; }
nodedir=${npm_config_nodedir:-$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")}
[ -f "$nodedir/include/node/common.gypi" ] || {
  echo "Node's headers are not in $nodedir/include/node: install them (Debian: apt-get install libnode-dev) or set npm_config_nodedir" >&2
  exit 1
}
export npm_config_nodedir="$nodedir"

echo "VS Code's dependencies (lib/vscode, from its npm-shrinkwrap.json)"
(cd "$vscode" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
# The native modules VS Code's server loads on Linux, built with node-gyp
# against the local headers (each is skipped once built). Left out:
# @vscode/ripgrep (its install script is the GitHub download; Debian's rg
# goes in its place below), kerberos (only for Kerberos proxy
# authentication, loaded on demand; it needs libkrb5-dev), the Windows-only
# modules, and @parcel/watcher (its prebuilt binary is an npm package).
# npm's own node-gyp, as `npm rebuild` would use.
gyp=${npm_config_node_gyp:-$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js}
[ -f "$gyp" ] || { echo "npm's node-gyp is not at $gyp: set npm_config_node_gyp" >&2; exit 1; }
for m in @vscode/spdlog @vscode/deviceid node-pty native-watchdog; do
  if ls "$vscode/node_modules/$m/build/Release/"*.node >/dev/null 2>&1; then continue; fi
  echo "building $m"
  (cd "$vscode/node_modules/$m" && node "$gyp" rebuild --nodedir="$nodedir" >/dev/null 2>build.log) \
    || { cat "$vscode/node_modules/$m/build.log" >&2; exit 1; }
done
# code-server's own native dependency: argon2 (password hashing) would
# download a prebuilt binary from GitHub; build it from source instead.
if ! ls ../argon2/lib/binding/napi-v*/argon2.node >/dev/null 2>&1; then
  echo "building argon2"
  (cd ../argon2 && npm_config_build_from_source=true node ../@mapbox/node-pre-gyp/bin/node-pre-gyp install --fallback-to-build --nodedir="$nodedir" >/dev/null 2>build.log) \
    || { cat ../argon2/build.log >&2; exit 1; }
fi
mkdir -p "$vscode/node_modules/@vscode/ripgrep/bin"
cp "$rg" "$vscode/node_modules/@vscode/ripgrep/bin/rg"

# The rest of postinstall.sh: the asar symlink, the remote CLI and the
# helper scripts, and the built-in extensions' shared dependency.
rm -rf "$vscode/node_modules.asar" && ln -s node_modules "$vscode/node_modules.asar"
(cd "$vscode/bin/remote-cli" && rm -f code-server && ln -s code-linux.sh code-server)
(cd "$vscode/bin/helpers" && rm -f browser.sh && ln -s browser-linux.sh browser.sh)
(cd "$vscode/extensions" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error && node ./postinstall.mjs >/dev/null)
touch "$vscode/.bcode-setup-done"
echo "code-server $(node -p 'require("./package.json").version') is set up"
