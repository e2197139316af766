package evm

import (
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit/internal/durationsetting"
	"github.com/payoutkit/payoutkit/internal/jsonstrict"
)

// FileConfig is the processor's configuration file (JSON), as read by
// ParseConfig. It names the hot wallet's key by where it lives (a file or
// an environment variable), never the key itself.
//
//	{
//	  "key_file": "hot-wallet.key",
//	  "replace_after": "3m",
//	  "rates": {"ETH": "3000.00"},
//	  "networks": [{
//	    "network": "ETH", "rpc_url": "http://127.0.0.1:8545", "chain_id": 1337,
//	    "confirmations": 2, "explorer_tx_url": "https://etherscan.io/tx/{txid}",
//	    "tokens": [{"ticker": "USDT", "contract": "0x...", "decimals": 6}]
//	  }]
//	}
type FileConfig struct {
	// KeyFile is a file holding the hot wallet's private key in hex.
	KeyFile string `json:"key_file,omitempty"`
	// KeyEnv is an environment variable holding the key in hex; one of
	// KeyFile and KeyEnv is required.
	KeyEnv string `json:"key_env,omitempty"`
	// ReplaceAfter, PollInterval and FundsBackoff are Config's, as Go
	// durations ("90s", "3m").
	ReplaceAfter string `json:"replace_after,omitempty"`
	PollInterval string `json:"poll_interval,omitempty"`
	FundsBackoff string `json:"funds_backoff,omitempty"`
	// Rates is the fixed USD price of each ticker (decimal strings), for
	// FixedRates; stablecoins not listed are 1.
	Rates map[string]string `json:"rates,omitempty"`
	// Networks are the EVM networks paid out on.
	Networks []FileNetwork `json:"networks"`
}

// FileNetwork is one network of a FileConfig; its fields are Network's.
type FileNetwork struct {
	Network       string      `json:"network"`
	RPCURL        string      `json:"rpc_url"`
	ChainID       int64       `json:"chain_id"`
	Native        string      `json:"native,omitempty"`
	Confirmations int         `json:"confirmations,omitempty"`
	ExplorerTxURL string      `json:"explorer_tx_url,omitempty"`
	MaxFeeGwei    string      `json:"max_fee_gwei,omitempty"`
	Tokens        []FileToken `json:"tokens,omitempty"`
}

// FileToken is one token of a FileNetwork; its fields are Token's.
type FileToken struct {
	Ticker   string `json:"ticker"`
	Contract string `json:"contract"`
	Decimals int    `json:"decimals"`
	GasLimit uint64 `json:"gas_limit,omitempty"`
}

// ReadConfigFile reads and parses the configuration file at path
// (ParseConfig) and loads the key it names (FileConfig.Config); a relative
// key_file is relative to the configuration file's directory.
func ReadConfigFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("evm config: %w", err)
	}
	fc, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if fc.KeyFile != "" && !filepath.IsAbs(fc.KeyFile) {
		fc.KeyFile = filepath.Join(filepath.Dir(path), fc.KeyFile)
	}
	return fc.Config()
}

// ParseConfig reads a configuration file's JSON and checks it: unknown
// fields, a missing key source, a bad address, duration or rate are errors
// naming the field. It reads no key: Config does.
func ParseConfig(data []byte) (FileConfig, error) {
	var fc FileConfig
	if err := jsonstrict.Decode(data, &fc); err != nil {
		return FileConfig{}, fmt.Errorf("evm config: %w", err)
	}
	if _, err := fc.settings(); err != nil {
		return FileConfig{}, err
	}
	return fc, nil
}

// Config turns the file into a processor Config: it loads the key from its
// file or environment variable (LoadKeyFile, KeyFromEnv) and builds the
// networks (dialled by New) and FixedRates.
func (fc FileConfig) Config() (Config, error) {
	c, err := fc.settings()
	if err != nil {
		return Config{}, err
	}
	switch {
	case fc.KeyFile != "":
		c.Signer, err = LoadKeyFile(fc.KeyFile)
	default:
		c.Signer, err = KeyFromEnv(fc.KeyEnv)
	}
	if err != nil {
		return Config{}, err
	}
	return c, nil
}

// settings is Config without the signer, checked.
func (fc FileConfig) settings() (Config, error) {
	var c Config
	if (fc.KeyFile == "") == (fc.KeyEnv == "") {
		return c, errors.New("evm config: set exactly one of key_file and key_env")
	}
	for _, d := range []struct {
		name string
		s    string
		to   *time.Duration
	}{{"replace_after", fc.ReplaceAfter, &c.ReplaceAfter}, {"poll_interval", fc.PollInterval, &c.PollInterval}, {"funds_backoff", fc.FundsBackoff, &c.FundsBackoff}} {
		if err := durationsetting.Parse(d.name, d.s, d.to); err != nil {
			return c, fmt.Errorf("evm config: %w", err)
		}
	}
	rates := FixedRates{}
	for t, s := range fc.Rates {
		v, err := decimal.NewFromString(s)
		if err != nil || v.Sign() <= 0 || t == "" {
			return c, fmt.Errorf("evm config: rates[%q] must be a positive decimal", t)
		}
		rates[strings.ToUpper(t)] = v
	}
	c.Rates = rates
	if len(fc.Networks) == 0 {
		return c, errors.New("evm config: networks must list at least one network")
	}
	for i, fn := range fc.Networks {
		n := Network{
			Name: fn.Network, RPCURL: fn.RPCURL, ChainID: fn.ChainID, Native: fn.Native,
			Confirmations: fn.Confirmations, ExplorerTxURL: fn.ExplorerTxURL,
		}
		if fn.MaxFeeGwei != "" {
			g, err := decimal.NewFromString(fn.MaxFeeGwei)
			if err != nil || g.Sign() <= 0 {
				return c, fmt.Errorf("evm config: networks[%d].max_fee_gwei must be a positive decimal", i)
			}
			n.MaxFeePerGas = g.Shift(9).Truncate(0).BigInt()
		}
		for j, ft := range fn.Tokens {
			if !common.IsHexAddress(ft.Contract) {
				return c, fmt.Errorf("evm config: networks[%d].tokens[%d].contract must be a 0x address", i, j)
			}
			n.Tokens = append(n.Tokens, Token{Ticker: ft.Ticker, Contract: common.HexToAddress(ft.Contract), Decimals: ft.Decimals, GasLimit: ft.GasLimit})
		}
		if err := n.check(); err != nil {
			return c, fmt.Errorf("evm config: networks[%d]: %w", i, err)
		}
		c.Networks = append(c.Networks, n)
	}
	return c, nil
}

// Network is one EVM network paid out on: its native coin and the tokens
// on it.
type Network struct {
	// Name is the network's name in the coin list: "ETH", "BSC", "POLYGON".
	Name string
	// RPCURL is the node's JSON-RPC endpoint, dialled by New unless Backend
	// is set.
	RPCURL string
	// Backend, when set, is used instead of dialling RPCURL (tests use
	// go-ethereum's simulated backend).
	Backend Backend
	// ChainID is the network's chain id; New checks the node agrees.
	ChainID int64
	// Native is the ticker of the network's coin. Defaults to ETH on ETH,
	// BNB on BSC and POL on POLYGON, and to Name elsewhere.
	Native string
	// Confirmations is how many blocks (the transaction's own included) a
	// transaction needs before its payout settles. Defaults to 1.
	Confirmations int
	// ExplorerTxURL is a block explorer's transaction page, with "{txid}"
	// where the hash goes. Defaults to none.
	ExplorerTxURL string
	// MaxFeePerGas, in wei, caps the fee per gas a transaction (or its
	// replacement) offers. Defaults to no cap.
	MaxFeePerGas *big.Int
	// Tokens are the ERC-20 tokens paid out on the network.
	Tokens []Token
}

// Token is an ERC-20 token paid out on a network.
type Token struct {
	// Ticker is the token's ticker in the coin list ("USDT").
	Ticker string
	// Contract is the token's contract address.
	Contract common.Address
	// Decimals is the token's on-chain precision (its decimals()).
	Decimals int
	// GasLimit is the gas a transfer is given when the node cannot
	// estimate it (otherwise the estimate and a quarter). Defaults to
	// 200000.
	GasLimit uint64
}

// DefaultTokenGasLimit is a token transfer's gas limit unless its Token
// sets one.
const DefaultTokenGasLimit = 200_000

func (n *Network) check() error {
	if n.Name == "" {
		return errors.New("network is required")
	}
	if n.ChainID <= 0 {
		return errors.New("chain_id must be positive")
	}
	if n.RPCURL == "" && n.Backend == nil {
		return errors.New("rpc_url is required")
	}
	if n.Confirmations < 0 {
		return errors.New("confirmations must not be negative")
	}
	if n.ExplorerTxURL != "" && !strings.Contains(n.ExplorerTxURL, "{txid}") {
		return errors.New("explorer_tx_url must contain {txid}")
	}
	seen := map[string]bool{strings.ToUpper(n.native()): true}
	for _, t := range n.Tokens {
		if t.Ticker == "" || seen[strings.ToUpper(t.Ticker)] {
			return fmt.Errorf("token %q: a ticker is required, once per network", t.Ticker)
		}
		seen[strings.ToUpper(t.Ticker)] = true
		if t.Decimals < 0 || t.Decimals > 36 {
			return fmt.Errorf("token %q: decimals must be 0 to 36", t.Ticker)
		}
		if t.Contract == (common.Address{}) {
			return fmt.Errorf("token %q: contract is required", t.Ticker)
		}
	}
	return nil
}

func (n *Network) native() string {
	if n.Native != "" {
		return n.Native
	}
	switch strings.ToUpper(n.Name) {
	case "BSC":
		return "BNB"
	case "POLYGON":
		return "POL"
	}
	return strings.ToUpper(n.Name)
}

// ExplorerURL returns the explorer page of txid on network, or "" when the
// network has no ExplorerTxURL (or is not configured).
func (c Config) ExplorerURL(network, txid string) string {
	for _, n := range c.Networks {
		if strings.EqualFold(n.Name, network) && n.ExplorerTxURL != "" {
			return strings.ReplaceAll(n.ExplorerTxURL, "{txid}", txid)
		}
	}
	return ""
}
