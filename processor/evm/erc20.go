package evm

import (
	"context"
	"errors"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
)

// ERC-20 function selectors.
var (
	selTransfer  = []byte{0xa9, 0x05, 0x9c, 0xbb} // transfer(address,uint256)
	selBalanceOf = []byte{0x70, 0xa0, 0x82, 0x31} // balanceOf(address)
)

// transferData is the calldata of transfer(to, amount).
func transferData(to common.Address, amount *big.Int) []byte {
	data := append([]byte(nil), selTransfer...)
	data = append(data, common.LeftPadBytes(to.Bytes(), 32)...)
	return append(data, common.LeftPadBytes(amount.Bytes(), 32)...)
}

// tokenBalance is the token's balanceOf(who) at the latest block.
func tokenBalance(ctx context.Context, b Backend, token, who common.Address) (*big.Int, error) {
	data := append(append([]byte(nil), selBalanceOf...), common.LeftPadBytes(who.Bytes(), 32)...)
	out, err := b.CallContract(ctx, ethereum.CallMsg{To: &token, Data: data}, nil)
	if err != nil {
		return nil, err
	}
	if len(out) != 32 {
		return nil, errors.New("balanceOf returned no uint256 (is the contract a token?)")
	}
	return new(big.Int).SetBytes(out), nil
}
