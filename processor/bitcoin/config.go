package bitcoin

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit/internal/durationsetting"
	"github.com/payoutkit/payoutkit/internal/jsonstrict"
)

// Defaults of Config's fields left zero.
const (
	DefaultFeeRateFloor   = 1   // sat/vB, the default minimum relay fee
	DefaultFeeRateCeiling = 500 // sat/vB
	DefaultMaxBatchSize   = 100 // payouts per transaction
	DefaultConfirmations  = 1   // blocks, the transaction's own included
	DefaultDustLimit      = 546 // satoshis, P2PKH's dust threshold at 3 sat/vB, the highest of the types paid
	DefaultBatchWindow    = 30 * time.Second
	DefaultMaxQuoteAge    = 5 * time.Minute
	DefaultReplaceAfter   = 30 * time.Minute
	DefaultLease          = 15 * time.Second
	DefaultMaxWeight      = MaxStandardWeight
)

// FileConfig is the processor's configuration file (JSON), as read by
// ParseConfig. It names the hot wallet's key by where it lives (a file or
// an environment variable), never the key itself, and the node's RPC
// password by a cookie file or the password itself.
//
//	{
//	  "network": "regtest",
//	  "rpc_host": "127.0.0.1:18334", "rpc_user": "payoutkit", "rpc_pass": "secret",
//	  "rpc_tls": false,
//	  "key_file": "hot-wallet.key",
//	  "start_height": 0,
//	  "fee_rate_floor": 2, "fee_rate_ceiling": 200,
//	  "batch_window": "30s", "max_batch_size": 100,
//	  "confirmations": 2, "dust_limit": 546,
//	  "max_quote_age": "5m", "rates": {"BTC": "65000.00"},
//	  "explorer_tx_url": "https://mempool.space/tx/{txid}"
//	}
type FileConfig struct {
	// Network is "mainnet", "testnet3", "regtest" or "simnet".
	Network string `json:"network"`
	// RPCHost is the node's RPC endpoint, host:port.
	RPCHost string `json:"rpc_host"`
	// RPCUser and RPCPass are the RPC credentials; RPCCookieFile instead
	// names a cookie file ("user:pass", as bitcoind writes it). One of
	// RPCPass and RPCCookieFile is required.
	RPCUser       string `json:"rpc_user,omitempty"`
	RPCPass       string `json:"rpc_pass,omitempty"`
	RPCCookieFile string `json:"rpc_cookie_file,omitempty"`
	// RPCTLS speaks TLS to the node; RPCCertFile is the node's certificate
	// (btcd's rpc.cert) when it is not signed by a known authority.
	RPCTLS      bool   `json:"rpc_tls,omitempty"`
	RPCCertFile string `json:"rpc_cert_file,omitempty"`
	// KeyFile is a file holding the hot wallet's private key (64 hex digits
	// or WIF). KeyEnv is an environment variable holding it instead; one of
	// KeyFile and KeyEnv is required.
	KeyFile string `json:"key_file,omitempty"`
	KeyEnv  string `json:"key_env,omitempty"`
	// StartHeight is Config's.
	StartHeight int64 `json:"start_height,omitempty"`
	// FeeRateFloor and FeeRateCeiling are Config's, in sat/vB.
	FeeRateFloor   int64 `json:"fee_rate_floor,omitempty"`
	FeeRateCeiling int64 `json:"fee_rate_ceiling,omitempty"`
	// BatchWindow, MaxQuoteAge, ReplaceAfter, PollInterval and Lease are
	// Config's, as Go durations ("30s", "5m").
	BatchWindow  string `json:"batch_window,omitempty"`
	MaxQuoteAge  string `json:"max_quote_age,omitempty"`
	ReplaceAfter string `json:"replace_after,omitempty"`
	PollInterval string `json:"poll_interval,omitempty"`
	Lease        string `json:"lease,omitempty"`
	// MaxBatchSize, Confirmations, DustLimit and MaxWeight are Config's.
	MaxBatchSize  int   `json:"max_batch_size,omitempty"`
	Confirmations int   `json:"confirmations,omitempty"`
	DustLimit     int64 `json:"dust_limit,omitempty"`
	MaxWeight     int64 `json:"max_weight,omitempty"`
	// Rates is a fixed USD price of BTC (a decimal string) for FixedRates,
	// {"BTC": "65000.00"}; a live feed is plugged in through Config.Rates.
	Rates map[string]string `json:"rates,omitempty"`
	// ExplorerTxURL is Config's.
	ExplorerTxURL string `json:"explorer_tx_url,omitempty"`
}

// Config configures the Bitcoin rail.
type Config struct {
	// Net is the network's parameters (chaincfg.MainNetParams, ...).
	Net *chaincfg.Params
	// RPC is how the node is reached.
	RPC RPCConfig
	// Signer is the hot wallet; required (Config from a FileConfig loads
	// a LocalKey).
	Signer Signer
	// StartHeight is the block height from which the wallet's outputs are
	// looked for the first time: the height of the wallet's first funding,
	// or an earlier one.
	StartHeight int64
	// FeeRateFloor and FeeRateCeiling bound the fee rate, in sat/vB, taken
	// from the node's estimate. Default 1 and 500.
	FeeRateFloor, FeeRateCeiling int64
	// BatchWindow is how long a payout handed off may wait for others to
	// share its transaction. Default 30 seconds.
	BatchWindow time.Duration
	// MaxBatchSize is the most payouts in one transaction; a batch is sent
	// as soon as it is full. Default 100.
	MaxBatchSize int
	// Confirmations is how many blocks (the transaction's own included) a
	// transaction needs before its payouts settle. Default 1.
	Confirmations int
	// DustLimit, in satoshis, is the smallest payout output: a payout
	// below it fails. Default 546.
	DustLimit int64
	// MaxWeight is the largest transaction built, in weight units; at most
	// MaxStandardWeight, the default.
	MaxWeight int64
	// MaxQuoteAge is the oldest USD price accepted. Default 5 minutes.
	MaxQuoteAge time.Duration
	// ReplaceAfter is how long a transaction may stay unconfirmed before
	// it is replaced with a higher fee. Default 30 minutes.
	ReplaceAfter time.Duration
	// Rates prices BTC in USD. Default: FixedRates from the file, or none.
	Rates Rates
	// ExplorerTxURL is a block explorer's transaction page, with "{txid}"
	// where the txid goes. Default none.
	ExplorerTxURL string

	// PollInterval is how often the processor's loop scans new blocks,
	// settles, rebroadcasts and batches. Default 5 seconds.
	PollInterval time.Duration
	// RebroadcastAfter is how long an unmined transaction waits before it
	// is broadcast again. Default a minute.
	RebroadcastAfter time.Duration
	// Lease is how long the wallet's lease lasts unrenewed. Of the
	// processes paying from one wallet on one database, only the lease's
	// holder runs the loop (scans, settles, bumps, broadcasts, batches); it
	// renews the lease every round and gives it up at Stop, and another
	// process takes it over once it has lapsed (a crash), or at once when
	// the holder was a process of the same host that no longer runs.
	// Default 15 seconds, and at least three PollIntervals.
	Lease time.Duration
	// Logger receives the processor's log lines. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Checkpoint, when set, is called at "signed" (a batch's transaction
	// is stored, not broadcast) and "sent" (broadcast), for fault-injection
	// tests that stop the process there.
	Checkpoint func(point string)
}

// RPCConfig is how the node's JSON-RPC is reached.
type RPCConfig struct {
	// Host is host:port.
	Host string
	// User and Pass are the credentials, unless CookieFile is set.
	User, Pass string
	// CookieFile is a file of "user:pass", read at each connection.
	CookieFile string
	// TLS speaks HTTPS; CertFile is the node's certificate (PEM) when it
	// is not signed by a known authority.
	TLS      bool
	CertFile string
}

// String shows the host and user, never the password.
func (r RPCConfig) String() string {
	return fmt.Sprintf("bitcoin.RPCConfig(%s, user %q, tls %t)", r.Host, r.User, r.TLS)
}

// GoString shows the host and user, never the password.
func (r RPCConfig) GoString() string { return r.String() }

// Networks maps a configuration's network names to their parameters.
var Networks = map[string]*chaincfg.Params{
	"mainnet":  &chaincfg.MainNetParams,
	"testnet3": &chaincfg.TestNet3Params,
	"regtest":  &chaincfg.RegressionNetParams,
	"simnet":   &chaincfg.SimNetParams,
}

// ReadConfigFile reads and parses the configuration file at path
// (ParseConfig) and loads the key it names (FileConfig.Config); a relative
// key_file, rpc_cookie_file or rpc_cert_file is relative to the
// configuration file's directory.
func ReadConfigFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("bitcoin config: %w", err)
	}
	fc, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	for _, f := range []*string{&fc.KeyFile, &fc.RPCCookieFile, &fc.RPCCertFile} {
		if *f != "" && !filepath.IsAbs(*f) {
			*f = filepath.Join(filepath.Dir(path), *f)
		}
	}
	return fc.Config()
}

// ParseConfig reads a configuration file's JSON and checks it: unknown
// fields, a missing key source or network, a bad duration, rate or bound
// are errors naming the field. It reads no key and no file: Config does.
func ParseConfig(data []byte) (FileConfig, error) {
	var fc FileConfig
	if err := jsonstrict.Decode(data, &fc); err != nil {
		return FileConfig{}, fmt.Errorf("bitcoin config: %w", err)
	}
	if _, err := fc.settings(); err != nil {
		return FileConfig{}, err
	}
	return fc, nil
}

// Config turns the file into a Config: it loads the key from its file or
// environment variable (LoadKeyFile, KeyFromEnv).
func (fc FileConfig) Config() (Config, error) {
	c, err := fc.settings()
	if err != nil {
		return Config{}, err
	}
	if fc.KeyFile != "" {
		c.Signer, err = LoadKeyFile(fc.KeyFile, c.Net)
	} else {
		c.Signer, err = KeyFromEnv(fc.KeyEnv, c.Net)
	}
	if err != nil {
		return Config{}, err
	}
	return c, nil
}

// settings is Config without the signer, checked, with defaults filled in.
func (fc FileConfig) settings() (Config, error) {
	c := Config{
		StartHeight: fc.StartHeight, FeeRateFloor: fc.FeeRateFloor, FeeRateCeiling: fc.FeeRateCeiling,
		MaxBatchSize: fc.MaxBatchSize, Confirmations: fc.Confirmations, DustLimit: fc.DustLimit,
		MaxWeight: fc.MaxWeight, ExplorerTxURL: fc.ExplorerTxURL,
		RPC: RPCConfig{Host: fc.RPCHost, User: fc.RPCUser, Pass: fc.RPCPass, CookieFile: fc.RPCCookieFile, TLS: fc.RPCTLS, CertFile: fc.RPCCertFile},
	}
	c.Net = Networks[fc.Network]
	if c.Net == nil {
		return c, errors.New(`bitcoin config: network must be "mainnet", "testnet3", "regtest" or "simnet"`)
	}
	if (fc.KeyFile == "") == (fc.KeyEnv == "") {
		return c, errors.New("bitcoin config: set exactly one of key_file and key_env")
	}
	if fc.RPCHost == "" {
		return c, errors.New("bitcoin config: rpc_host is required")
	}
	if (fc.RPCPass == "") == (fc.RPCCookieFile == "") {
		return c, errors.New("bitcoin config: set exactly one of rpc_pass and rpc_cookie_file")
	}
	if fc.RPCPass != "" && fc.RPCUser == "" {
		return c, errors.New("bitcoin config: rpc_user is required with rpc_pass")
	}
	if fc.RPCCertFile != "" && !fc.RPCTLS {
		return c, errors.New("bitcoin config: rpc_cert_file needs rpc_tls")
	}
	for _, d := range []struct {
		name string
		s    string
		to   *time.Duration
	}{{"batch_window", fc.BatchWindow, &c.BatchWindow}, {"max_quote_age", fc.MaxQuoteAge, &c.MaxQuoteAge}, {"replace_after", fc.ReplaceAfter, &c.ReplaceAfter}, {"poll_interval", fc.PollInterval, &c.PollInterval}, {"lease", fc.Lease, &c.Lease}} {
		if err := durationsetting.Parse(d.name, d.s, d.to); err != nil {
			return c, fmt.Errorf("bitcoin config: %w", err)
		}
	}
	if len(fc.Rates) > 0 {
		rates := FixedRates{}
		for t, s := range fc.Rates {
			v, err := decimal.NewFromString(s)
			if err != nil || v.Sign() <= 0 || !strings.EqualFold(t, "BTC") {
				return c, fmt.Errorf("bitcoin config: rates[%q] must be BTC's price, a positive decimal", t)
			}
			rates[strings.ToUpper(t)] = v
		}
		c.Rates = rates
	}
	if err := c.withDefaults(); err != nil {
		return c, fmt.Errorf("bitcoin config: %w", err)
	}
	return c, nil
}

// withDefaults fills in the defaults of zero fields and checks the rest.
func (c *Config) withDefaults() error {
	if c.FeeRateFloor == 0 {
		c.FeeRateFloor = DefaultFeeRateFloor
	}
	if c.FeeRateCeiling == 0 {
		c.FeeRateCeiling = max(DefaultFeeRateCeiling, c.FeeRateFloor)
	}
	if c.BatchWindow == 0 {
		c.BatchWindow = DefaultBatchWindow
	}
	if c.MaxBatchSize == 0 {
		c.MaxBatchSize = DefaultMaxBatchSize
	}
	if c.Confirmations == 0 {
		c.Confirmations = DefaultConfirmations
	}
	if c.DustLimit == 0 {
		c.DustLimit = DefaultDustLimit
	}
	if c.MaxWeight == 0 {
		c.MaxWeight = DefaultMaxWeight
	}
	if c.MaxQuoteAge == 0 {
		c.MaxQuoteAge = DefaultMaxQuoteAge
	}
	if c.ReplaceAfter == 0 {
		c.ReplaceAfter = DefaultReplaceAfter
	}
	if c.PollInterval == 0 {
		c.PollInterval = 5 * time.Second
	}
	if c.RebroadcastAfter == 0 {
		c.RebroadcastAfter = time.Minute
	}
	if c.Lease == 0 {
		c.Lease = max(DefaultLease, 3*c.PollInterval)
	}
	switch {
	case c.StartHeight < 0:
		return errors.New("start_height must not be negative")
	case c.FeeRateFloor < 1 || c.FeeRateFloor > MaxFeeRate:
		return fmt.Errorf("fee_rate_floor must be 1 to %d sat/vB", MaxFeeRate)
	case c.FeeRateCeiling < c.FeeRateFloor || c.FeeRateCeiling > MaxFeeRate:
		return fmt.Errorf("fee_rate_ceiling must be fee_rate_floor to %d sat/vB", MaxFeeRate)
	case c.MaxBatchSize < 1 || c.MaxBatchSize > MaxBatchSize:
		return fmt.Errorf("max_batch_size must be 1 to %d", MaxBatchSize)
	case c.Confirmations < 1 || c.Confirmations > 1000:
		return errors.New("confirmations must be 1 to 1000")
	case c.DustLimit < 1 || c.DustLimit > MaxSatoshis:
		return errors.New("dust_limit must be a positive number of satoshis")
	case c.MaxWeight < minWeight || c.MaxWeight > MaxStandardWeight:
		return fmt.Errorf("max_weight must be %d to %d", minWeight, MaxStandardWeight)
	case c.PollInterval < 0 || c.RebroadcastAfter < 0 || c.BatchWindow < 0 || c.MaxQuoteAge < 0 || c.ReplaceAfter < 0:
		return errors.New("durations must be positive")
	case c.Lease < 2*c.PollInterval:
		return errors.New("lease must be at least twice poll_interval: the holder renews it every round")
	case c.ExplorerTxURL != "" && !strings.Contains(c.ExplorerTxURL, "{txid}"):
		return errors.New("explorer_tx_url must contain {txid}")
	}
	return nil
}

// ExplorerURL returns the explorer page of txid, or "" when ExplorerTxURL
// is not set.
func (c Config) ExplorerURL(txid string) string {
	if c.ExplorerTxURL == "" {
		return ""
	}
	return strings.ReplaceAll(c.ExplorerTxURL, "{txid}", txid)
}

// Limits of the configuration's bounds.
const (
	// MaxFeeRate is the highest fee rate configurable, in sat/vB.
	MaxFeeRate = 10_000
	// MaxBatchSize is the most payouts configurable in one transaction.
	MaxBatchSize = 2_000
	// MaxSatoshis is all the bitcoin there will ever be, in satoshis.
	MaxSatoshis = 21_000_000 * 100_000_000
	// minWeight is the smallest max_weight: a transaction of one input,
	// one payout and change.
	minWeight = 4 * 200
)
