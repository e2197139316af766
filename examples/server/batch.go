package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/batchcsv"
)

// maxBatchProblems is how many of a file's problems payouts batch lists
// before it says how many more there are.
const maxBatchProblems = 20

// payoutsBatchCommand creates a batch of payouts from a CSV file, as the
// portal's batch page does (contract, section 12), and prints the batch.
// Its ID defaults to one derived from the file's SHA-256, so that running
// the same file again (after a timeout, say) replays the batch instead of
// paying twice.
func payoutsBatchCommand(fs *flag.FlagSet) runFunc {
	dsn := dbFlag(fs)
	ws := workspaceFlag(fs)
	file := fs.String("file", "", "the batch's CSV `file`, headed "+batchcsv.HeaderLine+" (required)")
	batchID := fs.String("batch-id", "", "the batch's `id` (default: csv- and the start of the file's SHA-256, so that the same file again replays the batch)")
	allOrNothing := fs.Bool("all-or-nothing", false, "create none of the payouts unless every one is accepted")
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		if *ws == "" || *file == "" {
			return usagef("payouts batch: -workspace and -file are required")
		}
		data, err := readBatchFile(*file)
		if err != nil {
			return fmt.Errorf("payouts batch: %w", err)
		}
		parsed, err := batchcsv.Parse(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("payouts batch: %s: %w (nothing was created)", *file, err)
		}
		if len(parsed.Problems) > 0 {
			return fmt.Errorf("payouts batch: %s: %s (nothing was created)", *file, listProblems(parsed.Problems))
		}
		id := *batchID
		if id == "" {
			id = fileBatchID(data)
		}
		engine, done, err := adminEngine(ctx, *dsn, stderr)
		if err != nil {
			return err
		}
		defer done()
		b, replayed, err := engine.CreatePayoutBatch(ctx, *ws, payoutkit.CreatePayoutBatchRequest{
			BatchID: id, Payouts: parsed.Payouts, AllOrNothing: *allOrNothing,
		})
		if e, ok := errors.AsType[*payoutkit.Error](err); ok {
			// The engine's refusal: of the whole batch, so nothing exists.
			return fmt.Errorf("payouts batch: %s (nothing was created)", batchError(e, parsed.Lines))
		}
		if err != nil {
			return fmt.Errorf("payouts batch: %w", err)
		}
		if replayed {
			newLogger(stderr, "json").Info("payouts batch: the batch was created before; it is printed as it is, and nothing was paid twice", "batch_id", id)
		}
		return printJSON(stdout, b)
	}
}

// readBatchFile reads a batch file, no more of it than batchcsv.Parse
// reads, so that a huge file is refused without being held.
func readBatchFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, batchcsv.MaxBytes+1))
}

// fileBatchID is the batch ID of a file run without -batch-id: "csv-" and
// the first 128 bits of its SHA-256, in hex.
func fileBatchID(data []byte) string {
	sum := sha256.Sum256(data)
	return "csv-" + hex.EncodeToString(sum[:16])
}

// listProblems renders a file's problems, one per line, the first
// maxBatchProblems of them.
func listProblems(problems []batchcsv.Problem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(problems))
	for i, p := range problems {
		if i == maxBatchProblems {
			fmt.Fprintf(&b, "\n  and %d more", len(problems)-i)
			break
		}
		b.WriteString("\n  " + p.Error())
	}
	return b.String()
}

// batchError renders an engine's refusal of a batch with the fields it
// names, each item's by its line in the file.
func batchError(e *payoutkit.Error, lines []int) string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	var b strings.Builder
	b.WriteString(e.Message + ":")
	for _, f := range e.Fields {
		b.WriteString("\n  ")
		if rest, ok := strings.CutPrefix(f.Field, "payouts["); ok {
			num, field, _ := strings.Cut(rest, "].")
			if i, err := strconv.Atoi(num); err == nil && i >= 0 && i < len(lines) {
				fmt.Fprintf(&b, "line %d, %s: %s", lines[i], field, f.Message)
				continue
			}
		}
		b.WriteString(f.Field + ": " + f.Message)
	}
	return b.String()
}
