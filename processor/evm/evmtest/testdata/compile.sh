#!/bin/sh
# Compiles TestToken.sol into TestToken.bin and TestToken.abi with solcjs
# (npm i -g solc@0.8.37) or Debian's solc. Run from this directory:
#	go generate ./processor/evm/evmtest/   (or ./compile.sh here)
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if command -v solc >/dev/null 2>&1; then
	solc --optimize --bin --abi -o "$tmp" TestToken.sol
else
	solcjs --optimize --bin --abi -o "$tmp" TestToken.sol
fi
for f in "$tmp"/*TestToken.bin; do cp "$f" TestToken.bin; done
for f in "$tmp"/*TestToken.abi; do cp "$f" TestToken.abi; done
