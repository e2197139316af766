package btcdtest

import (
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
)

func TestStartGenerate(t *testing.T) {
	k, _ := btcec.NewPrivateKey()
	a, err := btcutil.NewAddressPubKeyHash(btcutil.Hash160(k.PubKey().SerializeCompressed()), &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	n := Start(t, a.EncodeAddress())
	start := time.Now()
	n.Generate(t, ActivationHeight+1)
	t.Logf("mined %d blocks in %s", ActivationHeight+1, time.Since(start))
	c, err := n.Client.GetBlockCount()
	if err != nil || c != ActivationHeight+1 {
		t.Fatalf("height %d, %v", c, err)
	}
}
