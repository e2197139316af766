package durationsetting

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		text string
		want time.Duration // the setting's value after Parse; -1: an error
	}{
		{"", 7}, // absent: the default (7) stays
		{"30s", 30 * time.Second},
		{"1h2m", time.Hour + 2*time.Minute},
		{"250ms", 250 * time.Millisecond},
		{"0s", -1},
		{"-5s", -1},
		{"30", -1}, // no unit
		{"soon", -1},
	} {
		d := time.Duration(7)
		err := Parse("poll_interval", c.text, &d)
		if c.want < 0 {
			if want := `poll_interval must be a positive duration such as "30s"`; err == nil || err.Error() != want {
				t.Errorf("%q: %v, want the error %s", c.text, err, want)
			}
			if d != 7 {
				t.Errorf("%q: the setting changed to %s on an error", c.text, d)
			}
			continue
		}
		if err != nil || d != c.want {
			t.Errorf("%q: %s, %v; want %s", c.text, d, err, c.want)
		}
	}
}
