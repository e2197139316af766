// Package bitcoin is a payoutkit.Processor that pays BTC on Bitcoin (the
// coin list's BTC/BTC row), many payouts to one transaction, each exactly
// once: a batch's signed transaction is stored, its inputs reserved and
// its payouts pointed at it, in one database transaction before it is
// broadcast. Unconfirmed transactions are replaced with higher fees (BIP
// 125), batches whose inputs are spent elsewhere are paid anew once none of
// their transactions can confirm, reorgs are rewound, and one process at a
// time runs a wallet, under a lease in the database.
//
// Its parts are usable alone: the configuration file (ParseConfig), coin
// selection (SelectCoins), the fee split per payout (SplitFee), USD to
// satoshis (Rates, Satoshis), the hot wallet's key (Signer, LocalKey) and
// its outputs tracked in the engine's database from the node's blocks
// (Wallet). docs/BITCOIN.md has a walk-through with a local btcd.
package bitcoin
