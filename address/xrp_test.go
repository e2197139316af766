package address

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/base58"
)

// xrpEncode encodes an XRP base58check string: Bitcoin's base58check with
// the digits rewritten into the XRP alphabet.
func xrpEncode(payload []byte, version byte) string {
	s := []byte(base58.CheckEncode(payload, version))
	for i, c := range s {
		s[i] = xrpAlphabet[strings.IndexByte(bitcoinAlphabet, c)]
	}
	return string(s)
}

func TestXRPPublished(t *testing.T) {
	// The genesis account's ID is B5F762798A53D543A014CAF8B297CFF8F2F937E8
	// (the Account field of its transactions), and the special accounts are
	// account IDs 0 and 1.
	for _, c := range []struct {
		id, addr string
	}{
		{"b5f762798a53d543a014caf8b297cff8f2f937e8", "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"},
		{strings.Repeat("00", 20), "rrrrrrrrrrrrrrrrrrrrrhoLvTp"},
		{strings.Repeat("00", 19) + "01", "rrrrrrrrrrrrrrrrrrrrBZbvji"},
	} {
		if got := xrpEncode(mustHex(t, c.id), xrpAccountVersion); got != c.addr {
			t.Errorf("account ID %s encodes to %s, published %s", c.id, got, c.addr)
		}
	}
}

func TestXRP(t *testing.T) {
	for _, c := range []struct {
		addr, want string
	}{
		{"rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh", ""},
		{"r9cZA1mLK5R5Am25ArfXFmqgNwjZgnfk59", ""},
		{"rGWrZyQqhTp9Xu7G5Pkayo7bXjH4k4QYpf", ""},
		{"rN7n7otQDd6FczFgLdSqtcsAUxDkw6fzRH", ""},
		{"rrrrrrrrrrrrrrrrrrrrrhoLvTp", "black-hole account ACCOUNT_ZERO"},
		{"rrrrrrrrrrrrrrrrrrrrBZbvji", "black-hole account ACCOUNT_ONE"},
		{"rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTi", "bad checksum"},
		{"rHb9CJAWyB4rj91VRWn96DkukG4bwdtyT", "bad checksum"},
		{"rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh0", "invalid character '0'"},
		{"rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTl", "invalid character 'l'"},
		{"RHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh", `must start with "r"`},
		{"rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr", "want 25 to 35 characters, got 36"},
		{"rHb9CJAWyB4rj91VRW", "want 25 to 35 characters, got 18"},
		// xrpl.js address-codec X-address examples (r9cZA1..., with and
		// without a tag).
		{"X7AcgcsBL6XDcUb289X4mJ8djcdyKaB5hJDWMArnXr61cqZ", `must start with "r"`},
		{"X7AcgcsBL6XDcUb289X4mJ8djcdyKaGZMhc9YTE92ehJ2Fu", `must start with "r"`},
		{"XVLhHMPHU98es4dbozjVtdWzVrDjtV18pX8yuPT7y4xaEHi", `must start with "r"`},
		// The genesis seed ("masterpassphrase") and its public key.
		{"snoPBrXtMeMyMHUVTgbuqAfg1SUTb", `must start with "r"`},
		{"aBQG8RQAzjs1eTKFEAQXr2gS4utcDiEC9wmi7pfUPTi27VCahwgw", `must start with "r"`},
		// Only version 0x00 encodes to a leading "r" (the zero digit), so
		// any other version byte fails the prefix check.
		{xrpEncode(mustHex(t, "b5f762798a53d543a014caf8b297cff8f2f937e8"), 0x01), `must start with "r"`},
		// A valid checksum over 21 bytes of payload.
		{xrpEncode(mustHex(t, "00b5f762798a53d543a014caf8b297cff8f2f937e8"), 0x00), "decodes to 26 bytes"},
	} {
		checkResult(t, "XRP", c.addr, XRP(c.addr), c.want)
	}
}

// TestXRPRefusedVectorsAreWellFormed makes sure the X-address, seed and
// public key above are refused for what they are, not because they were
// mistyped here: each is a valid XRP base58check string.
func TestXRPRefusedVectorsAreWellFormed(t *testing.T) {
	for _, s := range []string{
		"X7AcgcsBL6XDcUb289X4mJ8djcdyKaB5hJDWMArnXr61cqZ",
		"XVLhHMPHU98es4dbozjVtdWzVrDjtV18pX8yuPT7y4xaEHi",
		"snoPBrXtMeMyMHUVTgbuqAfg1SUTb",
		"aBQG8RQAzjs1eTKFEAQXr2gS4utcDiEC9wmi7pfUPTi27VCahwgw",
		"rrrrrrrrrrrrrrrrrrrrrhoLvTp",
		"rrrrrrrrrrrrrrrrrrrrBZbvji",
	} {
		if _, _, err := decodeBase58Check(xrpToBitcoinAlphabet(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	// And the account ID behind the genesis address is the published one.
	payload, _, err := base58.CheckDecode(xrpToBitcoinAlphabet("rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"))
	if err != nil || hex.EncodeToString(payload) != "b5f762798a53d543a014caf8b297cff8f2f937e8" {
		t.Errorf("genesis decodes to %x (%v)", payload, err)
	}
}
