// Package bitcoin is a payoutkit.Processor that pays BTC on Bitcoin (the
// coin list's BTC/BTC row), many payouts to one transaction, each exactly
// once: a batch's signed transaction is stored, its inputs reserved and
// its payouts pointed at it, in one database transaction before it is
// broadcast. Its parts are usable alone: the configuration file
// (ParseConfig), coin selection (SelectCoins), the fee split per payout
// (SplitFee), USD to satoshis (Rates, Satoshis), the hot wallet's key
// (Signer, LocalKey) and its outputs tracked in the engine's database from
// the node's blocks (Wallet). Fee bumps, conflict detection and the
// server's wiring are not built yet: see docs/BITCOIN.md.
package bitcoin
