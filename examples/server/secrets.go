package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/payoutkit/payoutkit"
)

// The environment variables of the sealing keys. They are read from the
// environment only, never from flags, so that no key shows in a process
// listing.
const (
	// envSecretKey is the current key: base64 of 32 random bytes. Set, it
	// seals every webhook secret written from then on.
	envSecretKey = "PAYOUTKIT_SECRET_KEY"
	// envSecretKeyPrevious lists earlier keys (comma separated) that still
	// open the secrets they sealed, until a reseal has moved them to the
	// current key.
	envSecretKeyPrevious = "PAYOUTKIT_SECRET_KEY_PREVIOUS"
)

// secretKeys builds the key ring of the environment: nil when no current
// key is set (a previous key alone is a mistake). Errors never quote a key.
func secretKeys() (*payoutkit.KeyRing, error) {
	cur := strings.TrimSpace(os.Getenv(envSecretKey))
	prevList := strings.TrimSpace(os.Getenv(envSecretKeyPrevious))
	if cur == "" {
		if prevList != "" {
			return nil, usagef("%s is set without %s", envSecretKeyPrevious, envSecretKey)
		}
		return nil, nil
	}
	current, err := payoutkit.ParseSealKey(cur)
	if err != nil {
		return nil, usagef("%s: %v", envSecretKey, err)
	}
	var previous []payoutkit.SealKey
	for i, p := range strings.FieldsFunc(prevList, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		k, err := payoutkit.ParseSealKey(p)
		if err != nil {
			return nil, usagef("%s, key %d: %v", envSecretKeyPrevious, i+1, err)
		}
		if k.ID == current.ID {
			continue // the current key listed again: harmless
		}
		previous = append(previous, k)
	}
	ring, err := payoutkit.NewKeyRing(current, previous...)
	if err != nil {
		return nil, usagef("%s/%s: %v", envSecretKey, envSecretKeyPrevious, err)
	}
	return ring, nil
}

// secretsReseal seals every workspace's webhook secret with the current key
// of PAYOUTKIT_SECRET_KEY (plain ones and those sealed with a previous key)
// and prints what it did. It fails when a secret does not open, after
// resealing the others.
func secretsReseal(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("secrets reseal", stderr)
	dsn := dbFlag(fs)
	if err := parseFlags(fs, args, []string{"db"}); err != nil {
		return err
	}
	engine, done, err := adminEngine(ctx, *dsn, stderr)
	if err != nil {
		return err
	}
	defer done()
	rep, err := engine.ResealWebhookSecrets(ctx)
	if errors.Is(err, payoutkit.ErrNoSecretKeys) {
		return usagef("secrets reseal: %s must be set (base64 of 32 random bytes)", envSecretKey)
	}
	if len(rep.Failed) == 0 && err != nil {
		return err
	}
	if perr := printJSON(stdout, rep); perr != nil {
		return perr
	}
	if len(rep.Failed) > 0 {
		return fmt.Errorf("secrets reseal: %d webhook secrets did not open (see the report on stdout); add their keys to %s and run it again",
			len(rep.Failed), envSecretKeyPrevious)
	}
	return nil
}

// cursorKey derives the key of list cursors' HMAC from the current sealing
// key (PAYOUTKIT_SECRET_KEY), so that instances sharing the key accept each
// other's cursors and nobody without it can forge one; nil (the engine's
// fixed default key) when none is set. Rotating the sealing key invalidates
// the cursors in flight, which clients then start again.
func cursorKey() []byte {
	cur := strings.TrimSpace(os.Getenv(envSecretKey))
	if cur == "" {
		return nil
	}
	k, err := payoutkit.ParseSealKey(cur)
	if err != nil {
		return nil // secretKeys reports it
	}
	mac := hmac.New(sha256.New, k.Key)
	mac.Write([]byte("payoutkit list cursors"))
	return mac.Sum(nil)
}
