#!/bin/sh
# Installs bcode for one editor from this checkout, on a fresh machine:
#
#   editors/install.sh vscode    # bcode's binaries, then the extension into VS Code
#   editors/install.sh neovim    # bcode's binaries, then the plugin where Neovim loads packages
#
# Both first run `go install ./cmd/...` in the checkout (bcode, bcode-ls,
# bcode-agent, bcode-bench into $GOBIN or $(go env GOPATH)/bin): the
# extension and the plugin find bcode-ls on PATH and in that directory.
# The module is not published, so `go install ...@latest` cannot do this.
#
# vscode: `npm ci` in vscode-extension/ when its node_modules is missing or
# older than package-lock.json, the .vsix packaged into a temporary
# directory (vscode-extension/bcode.vsix is the tests'), then
# `${CODE:-code} --install-extension`. CODE=code-server, CODE=codium or
# CODE=code-insiders pick another VS Code.
#
# neovim (or nvim): a symlink (a copy where a symlink cannot be made)
# ${XDG_DATA_HOME:-~/.local/share}/nvim/site/pack/bcode/start/bcode ->
# nvim-plugin/, then the line to add to init.lua. Works with Neovim 0.7.2.
#
# Run by editors/editorstest/install_test.go.
set -eu

usage() {
  echo "usage: $0 vscode|neovim" >&2
  echo "  installs bcode's binaries (go install ./cmd/...) and the editor's extension or plugin from this checkout" >&2
  exit 2
}

[ $# -eq 1 ] || usage
case $1 in
  vscode) editor=vscode ;;
  neovim | nvim) editor=neovim ;;
  *) usage ;;
esac

checkout=$(cd "$(dirname "$0")/.." && pwd -P)

# install_binaries: go install ./cmd/... and where the binaries went.
install_binaries() {
  command -v go >/dev/null 2>&1 || {
    echo "go is missing: install Go (https://go.dev/dl/, or apt-get install golang-go), then run $0 again" >&2
    exit 1
  }
  echo "go install ./cmd/... (in $checkout)"
  (cd "$checkout" && go install ./cmd/...)
  bin=$(cd "$checkout" && go env GOBIN)
  if [ -z "$bin" ]; then
    gopath=$(cd "$checkout" && go env GOPATH)
    bin=${gopath%%:*}/bin
  fi
  echo "bcode, bcode-ls, bcode-agent and bcode-bench are in $bin"
  case ":$PATH:" in
    *":$bin:"*) ;;
    *) echo "note: $bin is not on PATH; the editor finds bcode-ls there anyway, but for bcode in a terminal add it: export PATH=\"\$PATH:$bin\"" ;;
  esac
}

install_vscode() {
  ext=$checkout/vscode-extension
  command -v npm >/dev/null 2>&1 || {
    echo "npm is missing: install Node.js 20 and npm (apt-get install nodejs npm), then run $0 vscode again" >&2
    exit 1
  }
  # npm writes node_modules/.package-lock.json on every install.
  if [ ! -f "$ext/node_modules/.package-lock.json" ] || [ "$ext/package-lock.json" -nt "$ext/node_modules/.package-lock.json" ]; then
    echo "npm ci (in $ext)"
    (cd "$ext" && npm ci --no-audit --no-fund --loglevel=error)
  fi
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/bcode-vsix.XXXXXX")
  vsix=$tmp/bcode.vsix
  echo "packaging the extension: $vsix"
  # vsce runs the vscode:prepublish script, the esbuild bundle, first.
  (cd "$ext" && ./node_modules/.bin/vsce package --no-dependencies --out "$vsix" >/dev/null)
  code=${CODE:-code}
  if ! command -v "$code" >/dev/null 2>&1; then
    echo "$code is not an executable on PATH: name your VS Code with CODE= (CODE=code-server, CODE=codium," >&2
    echo "CODE=/path/to/code) and run $0 vscode again, or install the package yourself:" >&2
    echo "  code --install-extension $vsix" >&2
    echo "(or Extensions view > ... > Install from VSIX...; the file stays at $vsix)" >&2
    exit 1
  fi
  "$code" --install-extension "$vsix" --force
  rm -rf "$tmp"
  echo "done: reload VS Code's window (Developer: Reload Window) if it was open"
}

install_neovim() {
  pack=${XDG_DATA_HOME:-$HOME/.local/share}/nvim/site/pack/bcode/start
  link=$pack/bcode
  mkdir -p "$pack"
  if [ -L "$link" ]; then
    rm -f "$link"
  elif [ -e "$link" ]; then
    # An older copy of the plugin is replaced; anything else is the user's.
    [ -f "$link/lua/bcode/init.lua" ] || {
      echo "$link exists and is not bcode's plugin: move it away, then run $0 neovim again" >&2
      exit 1
    }
    rm -rf "$link"
  fi
  if ln -s "$checkout/nvim-plugin" "$link" 2>/dev/null; then
    echo "the plugin: $link -> $checkout/nvim-plugin"
  else
    cp -R "$checkout/nvim-plugin" "$link"
    echo "the plugin: copied to $link (a symlink could not be made; run $0 neovim again after an update)"
  fi
  echo "add this line to your init.lua (~/.config/nvim/init.lua), or lua require('bcode').setup{} to init.vim:"
  echo "  require('bcode').setup{}"
}

install_binaries
"install_$editor"
