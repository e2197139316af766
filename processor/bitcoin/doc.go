// Package bitcoin is the foundation of a payoutkit.Processor that pays out
// BTC on Bitcoin (the coin list's BTC/BTC row): its configuration, coin
// selection, the fee split per payout, USD-to-satoshi conversion, the hot
// wallet's key (Signer, LocalKey) and its unspent outputs tracked in the
// engine's database from the node's blocks. See docs/BITCOIN.md for what is
// built and what is not yet.
package bitcoin
