package payoutkit

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoSecretKeys is a reseal asked of an engine without Config.SecretKeys.
var ErrNoSecretKeys = errors.New("payoutkit: no sealing keys are configured")

// ResealReport is what Engine.ResealWebhookSecrets did: how many workspaces
// it looked at, how many secrets it sealed again with the current key (plain
// ones included) and how many already were, and the secrets that did not
// open.
type ResealReport struct {
	Workspaces int             `json:"workspaces"`
	Resealed   int             `json:"resealed"`
	Current    int             `json:"current"`
	Failed     []ResealFailure `json:"failed"`
}

// ResealFailure is one workspace whose secret could not be resealed.
type ResealFailure struct {
	WorkspaceID string `json:"workspace_id"`
	Error       string `json:"error"`
}

// ResealWebhookSecrets seals every workspace's webhook secret with the
// current key of Config.SecretKeys, one conditional update each, so that it
// runs beside live servers and a concurrent rotation wins. Secrets that do
// not open are listed in the report, their *seal.Error joined in err. Once
// none fails, the previous keys may be dropped.
func (e *Engine) ResealWebhookSecrets(ctx context.Context) (ResealReport, error) {
	rep := ResealReport{Failed: []ResealFailure{}}
	if e.keys == nil {
		return rep, ErrNoSecretKeys
	}
	ids, err := e.store.WorkspaceIDs(ctx)
	if err != nil {
		return rep, err
	}
	var errs []error
	for _, id := range ids {
		resealed, err := e.resealOne(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			continue // deleted meanwhile
		case err != nil && ctx.Err() != nil:
			return rep, ctx.Err()
		case err != nil:
			rep.Failed = append(rep.Failed, ResealFailure{WorkspaceID: id, Error: err.Error()})
			errs = append(errs, err)
		case resealed:
			rep.Resealed++
		default:
			rep.Current++
		}
		rep.Workspaces++
	}
	return rep, errors.Join(errs...)
}

// resealOne reseals one workspace's secret unless it is current. A
// concurrent change of the secret makes it look again.
func (e *Engine) resealOne(ctx context.Context, id string) (resealed bool, err error) {
	for range 3 {
		ws, err := e.store.Workspace(ctx, id)
		if err != nil {
			return false, err
		}
		if e.keys.IsCurrent(ws.WebhookSecret) {
			return false, nil
		}
		secret, err := e.keys.Open(id, ws.WebhookSecret)
		if err != nil {
			return false, err
		}
		sealed, err := e.keys.Seal(id, secret)
		if err != nil {
			return false, err
		}
		err = e.store.SwapWebhookSecret(ctx, id, ws.WebhookSecret, sealed)
		if !errors.Is(err, ErrConflict) {
			return err == nil, err
		}
	}
	return false, fmt.Errorf("payoutkit: the webhook secret of workspace %s kept changing during the reseal", id)
}
