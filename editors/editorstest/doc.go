// Package editorstest drives bcode's editor clients from `go test`: the VS
// Code extension's `node --test` suites, the Neovim plugin's headless
// tests and the syntax and content checks of the configs for other editors,
// all against a bcode-ls built from this tree and a real git repository
// with a surviving boundary mutant. It has no code of its own outside
// tests; this file only names the package.
package editorstest
