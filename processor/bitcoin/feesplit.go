package bitcoin

import (
	"errors"
	"math/bits"
	"slices"
)

// SplitFee divides a transaction's fee among its payouts by the size of
// each payout's output (OutputSize): a payout's share is fee × its
// output's size ÷ the payouts' outputs' sizes, rounded so that the shares
// add up to fee exactly (largest remainder: each share is rounded down,
// and the satoshis left over go one each to the shares with the largest
// remainders, the earlier output first on a tie). The whole fee is shared,
// the inputs' and the change's part included: the payouts are why the
// transaction exists.
func SplitFee(fee int64, sizes []int64) ([]int64, error) {
	if fee < 0 {
		return nil, errors.New("bitcoin: SplitFee: a negative fee")
	}
	if len(sizes) == 0 {
		return nil, errors.New("bitcoin: SplitFee: no outputs")
	}
	var total uint64
	for _, s := range sizes {
		if s <= 0 || s > 1<<32 {
			return nil, errors.New("bitcoin: SplitFee: an output size out of range")
		}
		total += uint64(s)
	}
	shares := make([]int64, len(sizes))
	rems := make([]uint64, len(sizes))
	var given int64
	for i, s := range sizes {
		hi, lo := bits.Mul64(uint64(fee), uint64(s))
		q, r := bits.Div64(hi, lo, total) // hi < total, since fee×s/total ≤ fee
		shares[i], rems[i] = int64(q), r
		given += int64(q)
	}
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rems[a] > rems[b]:
			return -1
		case rems[a] < rems[b]:
			return 1
		}
		return 0
	})
	for _, i := range order[:fee-given] { // fewer than len(sizes) satoshis are left
		shares[i]++
	}
	return shares, nil
}
