package bitcoin

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSplitFee(t *testing.T) {
	for _, c := range []struct {
		fee   int64
		sizes []int64
		want  []int64
	}{
		{100, []int64{34}, []int64{100}},
		{100, []int64{34, 34}, []int64{50, 50}},
		{101, []int64{34, 34}, []int64{51, 50}},                      // the tie goes to the earlier output
		{1000, []int64{34, 32, 31, 43}, []int64{243, 229, 221, 307}}, // P2PKH, P2SH, P2WPKH, P2TR
		{0, []int64{34, 43}, []int64{0, 0}},
		{2, []int64{31, 31, 31}, []int64{1, 1, 0}},
		{MaxSatoshis, []int64{43, 31}, []int64{1_220_270_270_270_270, 879_729_729_729_730}},
	} {
		got, err := SplitFee(c.fee, c.sizes)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("SplitFee(%d, %v) = %v %v, want %v", c.fee, c.sizes, got, err, c.want)
		}
	}
	for _, bad := range []struct {
		fee   int64
		sizes []int64
	}{{-1, []int64{31}}, {10, nil}, {10, []int64{31, 0}}} {
		if _, err := SplitFee(bad.fee, bad.sizes); err == nil {
			t.Errorf("SplitFee(%d, %v): no error", bad.fee, bad.sizes)
		}
	}
}

// TestSplitFeeSums checks on random splits that the shares add up to the
// fee, and that each is within a satoshi of its exact share and no larger
// output's share is smaller.
func TestSplitFeeSums(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + r.IntN(300)
		sizes := make([]int64, n)
		var total int64
		for i := range sizes {
			sizes[i] = []int64{31, 32, 34, 43}[r.IntN(4)]
			total += sizes[i]
		}
		fee := r.Int64N(5_000_000)
		shares, err := SplitFee(fee, sizes)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for i, s := range shares {
			sum += s
			if lo := fee * sizes[i] / total; s < lo || s > lo+1 {
				t.Fatalf("share %d of %d for size %d of %d", s, fee, sizes[i], total)
			}
			for j := range shares {
				if sizes[j] > sizes[i] && shares[j] < shares[i] {
					t.Fatalf("a larger output's share is smaller: %v %v", sizes, shares)
				}
			}
		}
		if sum != fee {
			t.Fatalf("shares add to %d, fee %d", sum, fee)
		}
	}
}
