package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Duration is a time.Duration written in the configuration as a Go duration
// string: "30s", "10m", "1h30m". A bare number is refused, since its unit would
// be a guess, except a bare 0, which needs none. The zero value means "use
// the default" wherever a default exists (runs.retention tells an unset
// value from 0).
type Duration struct{ time.Duration }

// D returns d as a Duration; convenient in code that builds a Config.
func D(d time.Duration) Duration { return Duration{d} }

// UnmarshalJSON reads a duration string. null leaves d unchanged.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if bytes.Equal(b, []byte("0")) {
		d.Duration = 0
		return nil
	}
	if len(b) == 0 || b[0] != '"' {
		return fmt.Errorf(`want a duration string with a unit, like "30s", "10m" or "1h30m"; got %s`, describe(b))
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf(`want a duration like "30s", "10m" or "1h30m"; got %s`, strconv.Quote(s))
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes d as a duration string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.Duration.String())
}
