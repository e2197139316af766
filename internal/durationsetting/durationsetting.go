// Package durationsetting reads the duration settings of the processors'
// configuration files (processor/evm, processor/bitcoin): Go durations
// written as strings, such as "30s", which must be positive.
package durationsetting

import (
	"fmt"
	"time"
)

// Parse sets *to to text's duration, or leaves it alone when text is
// empty (the setting is absent: its default stays). A text that is not a
// positive Go duration is an error naming the setting by name.
func Parse(name, text string, to *time.Duration) error {
	if text == "" {
		return nil
	}
	v, err := time.ParseDuration(text)
	if err != nil || v <= 0 {
		return fmt.Errorf("%s must be a positive duration such as \"30s\"", name)
	}
	*to = v
	return nil
}
