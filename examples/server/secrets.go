package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/seal"
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
	// envSecretKeyFile names the key file when it is not the default one
	// beside a SQLite database: serve's -secret-key-file, which every admin
	// command reads from here.
	envSecretKeyFile = "PAYOUTKIT_SECRET_KEY_FILE"
)

// secretKeyFileSuffix makes the name of the key file beside a SQLite
// database: ./payoutkit.db's is ./payoutkit.db.secret-key.
const secretKeyFileSuffix = ".secret-key"

// sealing is how a command seals webhook secrets.
type sealing struct {
	// ring seals and opens them; nil stores them plain.
	ring *seal.KeyRing
	// current is the ring's current key (zero when ring is nil).
	current seal.Key
	// file is the key file the current key was read from or made in; ""
	// when it came from the environment, or there is none.
	file string
	// made is set when this command made the key file.
	made bool
}

// defaultKeyFile is where the key file of the database named by dsn lives
// when no file is named: beside a SQLite database, none for PostgreSQL,
// whose instances on several machines must share one key.
func defaultKeyFile(dsn string) string {
	if isPostgres(dsn) {
		return ""
	}
	p := sqlitePath(dsn)
	if p == "" {
		return ""
	}
	return p + secretKeyFileSuffix
}

// secretKeys finds the sealing keys of a command, the same way for serve
// and every admin command: PAYOUTKIT_SECRET_KEY when set, else the key file
// (keyFile when given, else defaultKeyFile), with PAYOUTKIT_SECRET_KEY_PREVIOUS
// (and a key file that the environment's key replaced) opening older
// secrets. With create set (a database being initialised) and no key in
// the environment, a missing key file is made, readable by its owner alone,
// so that secrets are sealed from the first one. The ring is nil when there
// is no key at all. Errors never quote a key.
func secretKeys(dsn, keyFile string, create bool) (sealing, error) {
	envCurrent, previous, err := envKeys()
	if err != nil {
		return sealing{}, err
	}
	explicit := keyFile != ""
	if !explicit {
		keyFile = defaultKeyFile(dsn)
	}
	var fileKey *seal.Key
	made := false
	if keyFile != "" {
		k, err := readKeyFile(keyFile)
		switch {
		case err == nil:
			fileKey = &k
		case !errors.Is(err, fs.ErrNotExist):
			return sealing{}, err
		case envCurrent == nil && create:
			if k, made, err = makeKeyFile(keyFile); err != nil {
				return sealing{}, err
			}
			fileKey = &k
		case explicit && envCurrent == nil:
			return sealing{}, usagef("the sealing key file %s does not exist (%s or -secret-key-file names it; serve makes it when it initialises a database)", keyFile, envSecretKeyFile)
		}
	}
	s := sealing{}
	switch {
	case envCurrent != nil:
		s.current = *envCurrent
		if fileKey != nil && fileKey.ID != envCurrent.ID && !slices.ContainsFunc(previous, func(p seal.Key) bool { return p.ID == fileKey.ID }) {
			previous = append(previous, *fileKey) // it still opens what it sealed
		}
	case fileKey != nil:
		s.current, s.file, s.made = *fileKey, keyFile, made
	case len(previous) > 0:
		return sealing{}, usagef("%s is set without %s", envSecretKeyPrevious, envSecretKey)
	default:
		return sealing{}, nil
	}
	previous = slices.DeleteFunc(previous, func(p seal.Key) bool { return p.ID == s.current.ID }) // listed again: harmless
	ring, err := seal.NewKeyRing(s.current, previous...)
	if err != nil {
		return sealing{}, usagef("%s/%s: %v", envSecretKey, envSecretKeyPrevious, err)
	}
	s.ring = ring
	return s, nil
}

// envKeys reads the keys of the environment: the current one (nil when
// PAYOUTKIT_SECRET_KEY is unset) and the previous ones.
func envKeys() (*seal.Key, []seal.Key, error) {
	var previous []seal.Key
	prevList := strings.TrimSpace(os.Getenv(envSecretKeyPrevious))
	for i, p := range strings.FieldsFunc(prevList, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		k, err := seal.ParseKey(p)
		if err != nil {
			return nil, nil, usagef("%s, key %d: %v", envSecretKeyPrevious, i+1, err)
		}
		previous = append(previous, k)
	}
	cur := strings.TrimSpace(os.Getenv(envSecretKey))
	if cur == "" {
		return nil, previous, nil
	}
	current, err := seal.ParseKey(cur)
	if err != nil {
		return nil, nil, usagef("%s: %v", envSecretKey, err)
	}
	return &current, previous, nil
}

// readKeyFile reads a key file: the base64 of 32 random bytes, as
// PAYOUTKIT_SECRET_KEY takes it. A missing file is fs.ErrNotExist.
func readKeyFile(path string) (seal.Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return seal.Key{}, err
		}
		return seal.Key{}, fmt.Errorf("reading the sealing key file: %w", err)
	}
	k, err := seal.ParseKey(string(b))
	if err != nil {
		return seal.Key{}, fmt.Errorf("the sealing key file %s: %w", path, err)
	}
	return k, nil
}

// makeKeyFile writes a new random key to path, readable by its owner
// alone, unless a file is there already: then it reads that one (another
// instance initialising the same database made it first). made reports
// which. The file appears whole or not at all.
func makeKeyFile(path string) (k seal.Key, made bool, err error) {
	encoded := base64.StdEncoding.EncodeToString(seal.NewKey().Key)
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return seal.Key{}, false, fmt.Errorf("making the sealing key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file readable by its owner alone.
	_, err = tmp.WriteString(encoded + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return seal.Key{}, false, fmt.Errorf("making the sealing key file: %w", err)
	}
	// A link never replaces an existing file.
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		k, err := readKeyFile(path)
		return k, false, err
	} else if err != nil {
		return seal.Key{}, false, fmt.Errorf("making the sealing key file: %w", err)
	}
	k, err = seal.ParseKey(encoded)
	return k, true, err
}

// plainSecretsAdvice says how to have webhook secrets sealed where they are
// stored plain.
func plainSecretsAdvice(dsn string) string {
	msg := "no sealing key: webhook secrets written now are stored plain in the database; set " + envSecretKey +
		" to the base64 of 32 random bytes (openssl rand -base64 32)"
	if isPostgres(dsn) {
		msg += ", the same on every instance,"
	}
	return msg + " or name a key file with -secret-key-file (" + envSecretKeyFile + "), restart, then run `server secrets reseal -db …` to seal the secrets stored so far"
}

// secretsResealCommand seals every workspace's webhook secret with the current key
// of PAYOUTKIT_SECRET_KEY (plain ones and those sealed with a previous key)
// and prints what it did. It fails when a secret does not open, after
// resealing the others.
func secretsResealCommand(fs *flag.FlagSet) runFunc {
	dsn := dbFlag(fs)
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		engine, done, err := adminEngine(ctx, *dsn, stderr)
		if err != nil {
			return err
		}
		defer done()
		rep, err := engine.ResealWebhookSecrets(ctx)
		if errors.Is(err, payoutkit.ErrNoSecretKeys) {
			where := "a key file named by " + envSecretKeyFile
			if f := defaultKeyFile(*dsn); f != "" {
				where = "a key file at " + f + " (or where " + envSecretKeyFile + " says)"
			}
			return usagef("secrets reseal: no sealing key: set %s (base64 of 32 random bytes), or keep %s", envSecretKey, where)
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
}

// cursorKey derives the key of list cursors' HMAC from the current sealing
// key, so that instances sharing the key accept each other's cursors and
// nobody without it can forge one; nil (the engine's fixed default key)
// when there is none. Rotating the sealing key invalidates the cursors in
// flight, which clients then start again.
func cursorKey(s sealing) []byte {
	if s.ring == nil {
		return nil
	}
	mac := hmac.New(sha256.New, s.current.Key)
	mac.Write([]byte("payoutkit list cursors"))
	return mac.Sum(nil)
}
