package portal

import (
	"strconv"

	"github.com/payoutkit/payoutkit"
)

// chartDays is how many days the dashboard's chart shows, today included.
const chartDays = 30

// The chart's drawing area, in the SVG's own units: the bars' area inside
// margins that hold the count axis (left) and the day axis (bottom).
const (
	chartWidth, chartHeight         = 960, 280
	chartLeft, chartRight           = 48, 8
	chartTop, chartBottom           = 30, 30
	plotWidth                       = chartWidth - chartLeft - chartRight
	plotHeight                      = chartHeight - chartTop - chartBottom
	barShare                float64 = 0.7 // of a day's slot
)

// chartView is the dashboard's SVG chart of payouts per day, laid out by
// the server: the template only places what is computed here.
type chartView struct {
	Width, Height int
	// Left, Right, Top and Bottom are the plot area's edges.
	Left, Right, Top, Bottom int
	Days                     []chartDay
	YTicks                   []chartTick
	XTicks                   []chartTick
	// From and To name the first and last day, for the chart's title.
	From, To string
	// Total is the number of payouts the chart counts.
	Total int
}

// chartDay is one day's stacked bar: completed at the bottom, then failed,
// then in progress.
type chartDay struct {
	payoutkit.DayCount
	Date  string // YYYY-MM-DD
	Label string // e.g. "Nov 3", for the bar's tooltip
	Bars  []chartBar
}

// chartBar is one segment of a day's bar.
type chartBar struct {
	Class      string
	X, Y, W, H string
}

// chartTick is an axis label at a position along its axis.
type chartTick struct {
	Pos   string
	Label string
	// Anchor is the label's text-anchor: "end" for the last day's, so that
	// it stays inside the chart.
	Anchor string
}

// newChart lays out days (oldest first) as stacked bars over a count axis
// whose top is a round number at or above the busiest day.
func newChart(days []payoutkit.DayCount) chartView {
	c := chartView{Width: chartWidth, Height: chartHeight, Left: chartLeft, Right: chartWidth - chartRight,
		Top: chartTop, Bottom: chartHeight - chartBottom}
	busiest := 0
	for _, d := range days {
		busiest = max(busiest, d.Total())
		c.Total += d.Total()
	}
	top, step := axisScale(busiest)
	y := func(n int) float64 { return float64(c.Bottom) - float64(n)/float64(top)*plotHeight }
	for v := 0; v <= top; v += step {
		c.YTicks = append(c.YTicks, chartTick{Pos: num(y(v)), Label: strconv.Itoa(v)})
	}
	if len(days) == 0 {
		return c
	}
	slot := float64(plotWidth) / float64(len(days))
	width := slot * barShare
	for i, d := range days {
		x := float64(c.Left) + float64(i)*slot + (slot-width)/2
		cd := chartDay{DayCount: d, Date: d.Day.Format(dateLayout), Label: d.Day.Format("Jan 2")}
		base := 0
		for _, seg := range []struct {
			class string
			n     int
		}{{"bar-completed", d.Completed}, {"bar-failed", d.Failed}, {"bar-in-progress", d.InProgress}} {
			if seg.n == 0 {
				continue
			}
			lo, hi := y(base), y(base+seg.n)
			cd.Bars = append(cd.Bars, chartBar{Class: seg.class, X: num(x), Y: num(hi), W: num(width), H: num(lo - hi)})
			base += seg.n
		}
		c.Days = append(c.Days, cd)
		// A day label every week, counted back from today so that the
		// last bar is always named.
		switch {
		case i == len(days)-1:
			c.XTicks = append(c.XTicks, chartTick{Pos: num(x + width), Label: cd.Label, Anchor: "end"})
		case (len(days)-1-i)%7 == 0:
			c.XTicks = append(c.XTicks, chartTick{Pos: num(x + width/2), Label: cd.Label, Anchor: "middle"})
		}
	}
	c.From, c.To = days[0].Day.Format("Jan 2"), days[len(days)-1].Day.Format("Jan 2, 2006")
	return c
}

// axisScale picks the count axis's top and its step between labels: a
// step of 1, 2 or 5 times a power of ten giving at most 5 steps, and the
// first multiple of it at or above busiest (4 for an empty chart).
func axisScale(busiest int) (top, step int) {
	if busiest <= 0 {
		return 4, 1
	}
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			step = m * p
			if top = (busiest + step - 1) / step * step; top/step <= 5 {
				return top, step
			}
		}
	}
}

// num writes an SVG coordinate to a tenth of a unit.
func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
