package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/payoutkit/payoutkit"
)

// workspacePolicyCommand prints the workspace's payout policy, after setting the
// members named on the command line (an empty value clears a limit).
func workspacePolicyCommand(fs *flag.FlagSet) runFunc {
	dsn := dbFlag(fs)
	ws := workspaceFlag(fs)
	fs.String("max-payout", "", "refuse a payout above this `USD` amount ('' clears it)")
	fs.String("daily-limit", "", "refuse payouts beyond this `USD` amount in 24 hours ('' clears it)")
	fs.String("approval-over", "", "hold a payout above this `USD` amount for approval ('' clears it)")
	fs.String("address-allowlist", "", "on: pay only to addresses of the address book (`on|off`)")
	fs.String("cooling-off", "", "how long a new address waits before use (a `duration`, such as 24h)")
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		if *ws == "" {
			return usagef("workspace policy: -workspace is required")
		}
		var patch payoutkit.PolicyPatch
		var bad error
		fs.Visit(func(f *flag.Flag) {
			v := f.Value.String()
			limit := func() *payoutkit.Limit {
				if v == "" {
					return &payoutkit.Limit{}
				}
				a, err := payoutkit.ParseAmount(v)
				if err != nil {
					bad = usagef("workspace policy: -%s %q: %v", f.Name, v, err)
				}
				l := payoutkit.LimitOf(a)
				return &l
			}
			switch f.Name {
			case "max-payout":
				patch.MaxPayout = limit()
			case "daily-limit":
				patch.DailyLimit = limit()
			case "approval-over":
				patch.ApprovalOver = limit()
			case "address-allowlist":
				if v != "on" && v != "off" {
					bad = usagef("workspace policy: -address-allowlist must be on or off")
				}
				on := v == "on"
				patch.AddressAllowlist = &on
			case "cooling-off":
				d, err := time.ParseDuration(v)
				if err != nil {
					bad = usagef("workspace policy: -cooling-off %q: %v", v, err)
				}
				patch.CoolingOff = &d
			}
		})
		if bad != nil {
			return bad
		}
		engine, done, err := adminEngine(ctx, *dsn, stderr)
		if err != nil {
			return err
		}
		defer done()
		if patch == (payoutkit.PolicyPatch{}) {
			p, err := engine.PayoutPolicy(ctx, *ws)
			if err != nil {
				return err
			}
			return printJSON(stdout, p)
		}
		p, err := engine.SetPayoutPolicy(ctx, *ws, patch, payoutkit.ActorCLI)
		if err != nil {
			return err
		}
		return printJSON(stdout, p)
	}
}

// addressesCommand adds to, lists or removes from the workspace's address book.
func addressesCommand(sub string) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		dsn := dbFlag(fs)
		ws := workspaceFlag(fs)
		var network, address, label *string
		if sub != "list" {
			network = fs.String("network", "", "the address's `network`, such as TRON (required)")
			address = fs.String("address", "", "the `address` (required)")
		}
		if sub == "add" {
			label = fs.String("label", "", "a `label` for people")
		}
		return func(ctx context.Context, stdout, stderr io.Writer) error {
			if *ws == "" {
				return usagef("addresses %s: -workspace is required", sub)
			}
			if network != nil && (*network == "" || *address == "") {
				return usagef("addresses %s: -network and -address are required", sub)
			}
			engine, done, err := adminEngine(ctx, *dsn, stderr)
			if err != nil {
				return err
			}
			defer done()
			switch sub {
			case "add":
				e, err := engine.AddAddress(ctx, *ws, *network, *address, *label, payoutkit.ActorCLI)
				if err != nil {
					return err
				}
				return printJSON(stdout, e)
			case "remove":
				n, err := engine.RemoveAddress(ctx, *ws, *network, *address, payoutkit.ActorCLI)
				if err != nil {
					return err
				}
				if n == 0 {
					return fmt.Errorf("addresses remove: the address book of workspace %s has no %s address %s (nothing was removed)", *ws, *network, *address)
				}
				return printJSON(stdout, map[string]int{"removed": n})
			}
			list, err := engine.Addresses(ctx, *ws)
			if err != nil {
				return err
			}
			return printJSON(stdout, list)
		}
	}
}

// payoutDecisionCommand approves or rejects a payout held for approval and prints
// the payout.
func payoutDecisionCommand(sub string) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		dsn := dbFlag(fs)
		ws := workspaceFlag(fs)
		id := fs.String("payout-id", "", "the held payout's `payout_id` (required)")
		var reason *string
		if sub == "reject" {
			reason = fs.String("reason", "", "why, for the payout's failure_reason (default \"by staff\")")
		}
		return func(ctx context.Context, stdout, stderr io.Writer) error {
			if *ws == "" || *id == "" {
				return usagef("payouts %s: -workspace and -payout-id are required", sub)
			}
			engine, done, err := adminEngine(ctx, *dsn, stderr)
			if err != nil {
				return err
			}
			defer done()
			var p payoutkit.Payout
			if sub == "approve" {
				p, err = engine.ApprovePayout(ctx, *ws, *id, payoutkit.ActorCLI)
			} else {
				p, err = engine.RejectPayout(ctx, *ws, *id, *reason, payoutkit.ActorCLI)
			}
			if err != nil {
				return err
			}
			return printJSON(stdout, p)
		}
	}
}

// securityLogCommand prints the workspace's whole security log, newest first.
func securityLogCommand(fs *flag.FlagSet) runFunc {
	dsn := dbFlag(fs)
	ws := workspaceFlag(fs)
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		if *ws == "" {
			return usagef("security-log: -workspace is required")
		}
		engine, done, err := adminEngine(ctx, *dsn, stderr)
		if err != nil {
			return err
		}
		defer done()
		all := []payoutkit.SecurityLogEntry{}
		page := payoutkit.PageRequest{Limit: payoutkit.MaxListLimit}
		for {
			p, err := engine.SecurityLog(ctx, *ws, page)
			if err != nil {
				return err
			}
			all = append(all, p.Items...)
			if p.Next == "" {
				return printJSON(stdout, all)
			}
			page.Cursor = p.Next
		}
	}
}
