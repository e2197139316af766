package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// credentialsFileSuffix makes the name of the credentials file beside a
// SQLite database: ./payoutkit.db's is ./payoutkit.db.credentials.json.
const credentialsFileSuffix = ".credentials.json"

// defaultCredentialsFile is where the first start writes the credentials it
// prints, unless -credentials-file names a file: beside a SQLite database,
// or in the working directory for PostgreSQL.
func defaultCredentialsFile(dsn string) string {
	if p := sqlitePath(dsn); !isPostgres(dsn) && p != "" {
		return p + credentialsFileSuffix
	}
	return "payoutkit" + credentialsFileSuffix
}

// writeCredentials writes the first workspace's credentials to path,
// readable by its owner alone, and never over an existing file: the file
// appears whole or not at all.
func writeCredentials(path string, v workspaceJSON) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), path) // fails, replacing nothing, where a file is
}

// initialised reports whether the database has a workspace already, so that
// a start knows whether it is the first one.
func initialised(ctx context.Context, store payoutkit.Store) (bool, error) {
	ids, err := store.WorkspaceIDs(ctx)
	if err != nil {
		return false, fmt.Errorf("reading the workspaces: %w", err)
	}
	return len(ids) > 0, nil
}

// creatingEngine opens the database named by dsn for workspace create,
// making and migrating it where needed, and an engine over it. On a
// database without a workspace it finds or makes the sealing key as serve's
// first start does.
func creatingEngine(ctx context.Context, dsn string, stderr io.Writer) (*payoutkit.Engine, func(), error) {
	log := newLogger(stderr, "json")
	if _, _, err := envKeys(); err != nil { // before anything is made
		return nil, nil, err
	}
	store, err := openStore(ctx, dsn, log, asAdmin(), creating())
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*payoutkit.Engine, func(), error) {
		store.Close()
		return nil, nil, err
	}
	done, err := initialised(ctx, store)
	if err != nil {
		return fail(err)
	}
	keys, err := secretKeys(dsn, os.Getenv(envSecretKeyFile), !done)
	if err != nil {
		return fail(err)
	}
	logSealing(log, dsn, keys, false)
	engine, err := payoutkit.New(store, &payoutkit.Config{Logger: log, PasswordCost: passwordCost, SecretKeys: keys.ring})
	if err != nil {
		return fail(err)
	}
	return engine, func() { store.Close() }, nil
}

// logSealing tells how webhook secrets are sealed when a command made the
// key file and, for serve (warnPlain), warns once when they are stored
// plain.
func logSealing(log *slog.Logger, dsn string, keys sealing, warnPlain bool) {
	switch {
	case keys.made:
		log.Info("made a sealing key for webhook secrets; back it up apart from the database: without it they do not open",
			"secret_key_file", keys.file)
	case keys.ring == nil && warnPlain:
		log.Warn(plainSecretsAdvice(dsn))
	}
}

// migrateCommand brings an existing database's schema up to this binary's, as
// serve does when it starts, and prints whether it changed anything. Like
// the other admin commands it refuses a database that does not exist.
func migrateCommand(fs *flag.FlagSet) runFunc {
	dsn := dbFlag(fs)
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		log := newLogger(stderr, "json")
		store, err := adminStore(ctx, *dsn, log)
		if err == nil {
			store.Close()
			return printJSON(stdout, map[string]bool{"migrated": false})
		}
		if !errors.Is(err, sqlite.ErrSchemaOutdated) { // storage/postgres's is the same value
			return err
		}
		store, err = openStore(ctx, *dsn, log, asAdmin(), creating())
		if err != nil {
			return err
		}
		store.Close()
		return printJSON(stdout, map[string]bool{"migrated": true})
	}
}

// staffResetPasswordCommand gives a staff login a new password, printed once, and
// ends every portal session of theirs.
func staffResetPasswordCommand(fs *flag.FlagSet) runFunc {
	dsn := dbFlag(fs)
	ws := workspaceFlag(fs)
	email := fs.String("email", "", "the staff user's `e-mail` (required)")
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		if *ws == "" || *email == "" {
			return usagef("staff reset-password: -workspace and -email are required")
		}
		team, done, err := adminTeam(ctx, *dsn, stderr)
		if err != nil {
			return err
		}
		defer done()
		ns, err := team.ResetPassword(ctx, *ws, *email)
		if err != nil {
			return err
		}
		return printJSON(stdout, ns)
	}
}

// fileExists reports whether path names something (a file, or anything).
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
