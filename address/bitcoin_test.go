package address

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/base58"
	"github.com/btcsuite/btcd/btcutil/bech32"
)

// scriptPubKey decodes a segwit address the way BIP-173/350's reference code
// does and returns the output script (OP_n, push length, program), so the
// published vectors can be checked independently of our policy.
func scriptPubKey(t *testing.T, addr string) string {
	t.Helper()
	_, data, _, err := bech32.DecodeGeneric(addr)
	if err != nil {
		t.Fatalf("decode %s: %v", addr, err)
	}
	prog, err := bech32.ConvertBits(data[1:], 5, 8, false)
	if err != nil {
		t.Fatalf("convert %s: %v", addr, err)
	}
	op := byte(0)
	if data[0] > 0 {
		op = 0x50 + data[0]
	}
	return hex.EncodeToString(append([]byte{op, byte(len(prog))}, prog...))
}

// The "valid segwit addresses" lists of BIP-350 (and BIP-173 before it),
// with their published scriptPubKeys. want is "" where our policy accepts
// the address, else a fragment of the error.
var segwitValid = []struct {
	addr, script, want string
}{
	// BIP-350.
	{"BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4", "0014751e76e8199196d454941c45d1b3a323f1433bd6", ""},
	{"tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7", "00201863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262", "testnet"},
	{"bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kt5nd6y", "5128751e76e8199196d454941c45d1b3a323f1433bd6751e76e8199196d454941c45d1b3a323f1433bd6", "unsupported witness v1 program length 40"},
	{"BC1SW50QGDZ25J", "6002751e", "unsupported witness version 16"},
	{"bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs", "5210751e76e8199196d454941c45d1b3a323", "unsupported witness version 2"},
	{"tb1qqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesrxh6hy", "0020000000c4a5cad46221b2a187905e5266362b99d5e91c6ce24d165dab93e86433", "testnet"},
	{"tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c", "5120000000c4a5cad46221b2a187905e5266362b99d5e91c6ce24d165dab93e86433", "testnet"},
	{"bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0", "512079be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798", ""},
	// BIP-341 wallet test vectors (scriptPubKey section), first output.
	{"bc1p2wsldez5mud2yam29q22wgfh9439spgduvct83k3pm50fcxa5dps59h4z5", "512053a1f6e454df1aa2776a2814a721372d6258050de330b3c6d10ee8f4e0dda343", ""},
	// BIP-173's v1+ examples were encoded with bech32; BIP-350 made them
	// invalid, so they must now fail on the checksum variant.
	{"bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7k7grplx", "5128751e76e8199196d454941c45d1b3a323f1433bd6751e76e8199196d454941c45d1b3a323f1433bd6", "witness v1 needs a bech32m checksum"},
	{"BC1SW50QA3JX3S", "6002751e", "witness v16 needs a bech32m checksum"},
	{"bc1zw508d6qejxtdg4y5r3zarvaryvg6kdaj", "5210751e76e8199196d454941c45d1b3a323", "witness v2 needs a bech32m checksum"},
}

func TestSegwitValidVectors(t *testing.T) {
	for _, v := range segwitValid {
		if got := scriptPubKey(t, v.addr); got != v.script {
			t.Errorf("%s decodes to %s, published %s", v.addr, got, v.script)
		}
		checkResult(t, "BTC", v.addr, Bitcoin(v.addr), v.want)
	}
}

// The "invalid segwit addresses" lists of BIP-173 and BIP-350.
var segwitInvalid = []struct {
	addr, want string
}{
	// BIP-173.
	{"tc1qw508d6qejxtdg4y5r3zarvary0c5xw7kg3g4ty", anyError},                                                          // invalid hrp
	{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5", "bad checksum"},                                                    // invalid checksum
	{"BC13W508D6QEJXTDG4Y5R3ZARVARY0C5XW7KN40WF2", "invalid witness version 17"},                                      // invalid witness version
	{"bc1rw5uspcuh", "bad witness program length 1"},                                                                  // invalid program length
	{"bc10w508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kw5rljs90", "bad witness program length 41"}, // invalid program length
	{"BC1QR508D6QEJXTDG4Y5R3ZARVARYV98GJ9P", "bad witness v0 program length 16"},                                      // invalid length for v0
	{"tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sL5k7", "testnet"},                                     // mixed case (and testnet)
	{"bc1zw508d6qejxtdg4y5r3zarvaryvqyzf3du", "bad padding"},                                                          // zero padding of more than 4 bits
	{"tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3pjxtptv", "testnet"},                                     // non-zero padding (and testnet)
	{"bc1gmk9yu", "empty data"}, // empty data section
	// BIP-350.
	{"tc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq5zuyut", anyError}, // invalid hrp
	{"bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd", "witness v1 needs a bech32m checksum"},
	{"tb1z0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqglt7rf", "testnet"},
	{"BC1S0XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ54WELL", "witness v16 needs a bech32m checksum"},
	{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh", "witness v0 needs a bech32 checksum"},
	{"tb1q0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq24jc47", "testnet"},
	{"bc1p38j9r5y49hruaue7wxjce0updqjuyyx0kh56v8s25huc6995vvpql3jow4", "invalid character 'o'"},
	{"BC130XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ7ZWS8R", "invalid witness version 17"},
	{"bc1pw5dgrnzv", "bad witness program length 1"},
	{"bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v8n0nx0muaewav253zgeav", "bad witness program length 41"},
	{"BC1QR508D6QEJXTDG4Y5R3ZARVARYV98GJ9P", "bad witness v0 program length 16"},
	{"tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq47Zagq", "testnet"},
	{"bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v07qwwzcrf", "bad padding"},
	{"tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vpggkg4j", "testnet"},
	{"bc1gmk9yu", "empty data"},
}

func TestSegwitInvalidVectors(t *testing.T) {
	for _, v := range segwitInvalid {
		checkResult(t, "BTC", v.addr, Bitcoin(v.addr), v.want)
	}
}

// TestSegwitTestnetVectorsAtBIPLevel runs the BIPs' testnet vectors, which
// the Bitcoin validator refuses up front as testnet, through the segwit
// decoder with the "tb" prefix, so that they still check the BIP rules.
func TestSegwitTestnetVectorsAtBIPLevel(t *testing.T) {
	for _, c := range []struct {
		addr, want string
	}{
		{"tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7", ""},
		{"tb1qqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesrxh6hy", ""},
		{"tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c", ""},
		{"tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sL5k7", "mixed case"},
		{"tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3pjxtptv", "bad padding"},
		{"tb1z0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqglt7rf", "witness v2 needs a bech32m checksum"},
		{"tb1q0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq24jc47", "witness v0 needs a bech32 checksum"},
		{"tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq47Zagq", "mixed case"},
		{"tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vpggkg4j", "bad padding"},
	} {
		checkResult(t, "tb", c.addr, validateSegwit(c.addr, "tb"), c.want)
	}
}

// TestBech32Case covers BIP-173's case rule: all upper or all lower, never
// mixed, for both chains.
func TestBech32Case(t *testing.T) {
	for _, c := range []struct{ network, addr string }{
		{"BTC", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"},
		{"BTC", "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0"},
		{"LTC", "ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9"},
	} {
		upper := strings.ToUpper(c.addr)
		if err := Validate(c.network, upper); err != nil {
			t.Errorf("Validate(%s, %s) = %v, want nil", c.network, upper, err)
		}
		for i := range c.addr {
			if c.addr[i] < 'a' || c.addr[i] > 'z' {
				continue
			}
			m := c.addr[:i] + strings.ToUpper(c.addr[i:i+1]) + c.addr[i+1:]
			checkResult(t, c.network, m, Validate(c.network, m), "mixed case")
		}
	}
}

// TestBitcoinBase58 covers legacy addresses and the base58check strings that
// are not mainnet addresses: testnet addresses, private keys, extended keys.
func TestBitcoinBase58(t *testing.T) {
	// The genesis coinbase pays to HASH160 62e907b1...8f18, and the wiki's
	// P2SH example is script hash b472a266...a05e.
	for _, c := range []struct {
		addr    string
		version byte
		hash    string
	}{
		{"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", 0x00, "62e907b15cbf27d5425399ebf6f0fb50ebb88f18"},
		{"3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", 0x05, "b472a266d0bd89c13706a4132ccfb16f7c3b9fcb"},
	} {
		payload, version, err := base58.CheckDecode(c.addr)
		if err != nil || version != c.version || hex.EncodeToString(payload) != c.hash {
			t.Errorf("%s decodes to %x/%x/%v, published %x/%s", c.addr, version, payload, err, c.version, c.hash)
		}
	}

	for _, c := range []struct {
		addr, want string
	}{
		{"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", ""},
		{"3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", ""},
		{"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb", "bad checksum"},
		{"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfN0", "invalid character '0'"},
		{"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNaa", anyError}, // an extra character
		{"1A1zP1eP5QGefi2DMPTfTL5SLmv7Divf", anyError},    // truncated
		// Testnet P2PKH (0x6f) and P2SH (0xc4) with valid checksums.
		{"mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn", "testnet"},
		{"2MzQwSSnBHWHqSAqtTVQ6v47XtaisrJa1Vc", "testnet"},
		// The bitcoin wiki's WIF example (a private key, version 0x80).
		{"5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ", "decodes to 37 bytes"},
		// BIP-32 test vector 1's master public and private keys.
		{"xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8", "decodes to 82 bytes"},
		{"xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi", "decodes to 82 bytes"},
		// Regtest bech32.
		{"bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080", "testnet"},
	} {
		checkResult(t, "BTC", c.addr, Bitcoin(c.addr), c.want)
	}
}

// TestTestnetVectorsHaveValidChecksums makes sure the testnet and key
// vectors above are refused for the stated reason and not because they were
// mistyped here.
func TestTestnetVectorsHaveValidChecksums(t *testing.T) {
	for _, c := range []struct {
		addr    string
		version byte
	}{
		{"mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn", 0x6f},
		{"2MzQwSSnBHWHqSAqtTVQ6v47XtaisrJa1Vc", 0xc4},
		{"5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ", 0x80},
	} {
		if _, v, err := base58.CheckDecode(c.addr); err != nil || v != c.version {
			t.Errorf("%s: version %#x err %v, want version %#x", c.addr, v, err, c.version)
		}
	}
	// bcrt1 is the same program as BIP-173's first vector.
	if got := scriptPubKey(t, "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080"); got != "0014751e76e8199196d454941c45d1b3a323f1433bd6" {
		t.Errorf("bcrt1 vector decodes to %s", got)
	}
}

func TestLitecoin(t *testing.T) {
	for _, c := range []struct {
		addr, want string
	}{
		{"LM2WMpR1Rp6j3Sa59cMXMs1SPzj9eXpGc1", ""},
		{"LKKHMBjCU89fyFNgSRprDoD8Jb25N8uWvd", ""},
		{"M7zVKQKmtV5Rc7erVGVVC3khZbXxsS5HEX", ""},
		{"3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", ""}, // legacy P2SH, 0x05
		{"ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9", ""},
		{"LTC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KGMN4N9", ""},
		{"tltc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qsnr4fp", "testnet"},
		{"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "unsupported version byte 0x00"},
		{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "invalid character"},
		{"mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn", "testnet"},
		// BIP-173's v16 example re-encoded for ltc: bech32, so refused.
		{"ltc1sw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kx7lrn8", "witness v16 needs a bech32m checksum"},
	} {
		checkResult(t, "LTC", c.addr, Litecoin(c.addr), c.want)
	}
	// The published ltc1 and tltc1 vectors carry BIP-173's programs.
	for addr, script := range map[string]string{
		"ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9":                      "0014751e76e8199196d454941c45d1b3a323f1433bd6",
		"tltc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qsnr4fp": "00201863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262",
	} {
		if got := scriptPubKey(t, addr); got != script {
			t.Errorf("%s decodes to %s, published %s", addr, got, script)
		}
	}
}

func TestDogecoin(t *testing.T) {
	for _, c := range []struct {
		addr, want string
	}{
		{"DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L", ""},
		{"D8osUgxgU4J2yEhCzN5xQQ42tuuG7qBdri", ""},
		{"DFwtUPqF3ornMxgs6gt6A3Rpcuwizzsnev", ""},
		{"DEa7damK8MsbdCJztidBasZKVsDLJifWfE", ""},
		{"A6T5s5B1Saja9yAJWxQN8SNXvNzxaoFdcy", ""},
		{"9xqCpm3DpUYSzcoQSPb5SEGDwn9NRqwZnH", ""},
		{"ADNbM5fBujCRBW1vqezNeAWmnsLp19ki3n", ""},
		{"DDWUYQ3GfMDj8hkx8cbnAMYkTzzAunAQxgs", anyError}, // Bisq's invalid example: one extra character
		{"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "unsupported version byte 0x00"},
		{"3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", "unsupported version byte 0x05"},
		{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "invalid character"},
	} {
		checkResult(t, "DOGE", c.addr, Dogecoin(c.addr), c.want)
	}
}

// anyError as a checkResult want accepts any ErrInvalid, for vectors whose
// exact message does not matter.
const anyError = "\x00any"

// checkResult asserts err is nil when want is "", that it wraps ErrInvalid
// when want is anyError, and else also that its message contains want.
func checkResult(t *testing.T, network, addr string, err error, want string) {
	t.Helper()
	switch want {
	case "":
		if err != nil {
			t.Errorf("%s %s: got %v, want valid", network, addr, err)
		}
		return
	case anyError:
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s %s: got %v, want ErrInvalid", network, addr, err)
		}
		return
	}
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s %s: got %v, want ErrInvalid containing %q", network, addr, err, want)
	}
}
