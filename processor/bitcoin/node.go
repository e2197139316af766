package bitcoin

import (
	"fmt"
	"os"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire"
)

// Node is what the processor asks of a Bitcoin node over JSON-RPC; btcd's
// *rpcclient.Client implements it, against btcd or bitcoind. Its calls
// take no context (rpcclient's do not): callers check theirs between
// calls.
type Node interface {
	GetBlockCount() (int64, error)
	GetBlockHash(height int64) (*chainhash.Hash, error)
	// GetBlock is getblock at verbosity 0: the raw block, so that values
	// are read in satoshis, never through a float.
	GetBlock(hash *chainhash.Hash) (*wire.MsgBlock, error)
	SendRawTransaction(tx *wire.MsgTx, allowHighFees bool) (*chainhash.Hash, error)
}

var _ Node = (*rpcclient.Client)(nil)

// Dial returns a client of the node at c, in HTTP POST mode (no
// websocket), with its credentials or cookie file, over TLS when c.TLS.
// It sends nothing until used.
func Dial(c RPCConfig) (*rpcclient.Client, error) {
	cc := &rpcclient.ConnConfig{
		Host: c.Host, User: c.User, Pass: c.Pass, CookiePath: c.CookieFile,
		HTTPPostMode: true, DisableTLS: !c.TLS,
	}
	if c.CertFile != "" {
		pem, err := os.ReadFile(c.CertFile)
		if err != nil {
			return nil, fmt.Errorf("bitcoin: rpc_cert_file: %w", err)
		}
		cc.Certificates = pem
	}
	cl, err := rpcclient.New(cc, nil)
	if err != nil {
		return nil, fmt.Errorf("bitcoin: dial %s: %w", c.Host, err)
	}
	return cl, nil
}
