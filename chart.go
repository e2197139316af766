package payoutkit

import (
	"context"
	"errors"
	"time"
)

// DayCount is how many of a workspace's payouts were created on the UTC
// day starting at Day, by their status now (InProgress: submitted).
type DayCount struct {
	Day                           time.Time
	Completed, Failed, InProgress int
}

// Total is the day's number of payouts.
func (d DayCount) Total() int { return d.Completed + d.Failed + d.InProgress }

// PayoutDay is the UTC day since the Unix epoch that t falls in, by which
// stores count payouts (Store.PayoutsPerDay).
func PayoutDay(t time.Time) int64 {
	const day = int64(24 * time.Hour / time.Microsecond)
	us := t.UnixMicro()
	d := us / day
	if us%day < 0 {
		d--
	}
	return d
}

// PayoutDayRange is the days [first, end) that PayoutsPerDay's [from, to)
// touches.
func PayoutDayRange(from, to time.Time) (first, end int64) {
	return PayoutDay(from), PayoutDay(to.Add(-time.Microsecond)) + 1
}

// MaxChartDays bounds PayoutsPerDay's days.
const MaxChartDays = 366

// PayoutsPerDay counts the workspace's payouts per UTC day of creation for
// the last days days (1 to MaxChartDays), today included, oldest first, one
// entry a day.
func (e *Engine) PayoutsPerDay(ctx context.Context, workspaceID string, days int) ([]DayCount, error) {
	if days < 1 || days > MaxChartDays {
		return nil, invalidField("days", "must be between 1 and 366")
	}
	today := e.clock().UTC().Truncate(24 * time.Hour)
	from, to := today.AddDate(0, 0, 1-days), today.AddDate(0, 0, 1)
	counts, err := e.store.PayoutsPerDay(ctx, workspaceID, from, to)
	if errors.Is(err, ErrNotFound) {
		return nil, errNotFound("workspace")
	}
	if err != nil {
		return nil, err
	}
	out := make([]DayCount, days)
	for i := range out {
		out[i].Day = from.AddDate(0, 0, i)
	}
	for _, c := range counts {
		if i := int(c.Day.Sub(from) / (24 * time.Hour)); i >= 0 && i < days {
			c.Day = out[i].Day
			out[i] = c
		}
	}
	return out, nil
}
