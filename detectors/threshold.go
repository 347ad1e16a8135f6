package detectors

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ErrSettings is wrapped by the error for a detectors: section that names
// a detector or a threshold the catalog does not have, or a bad value.
var ErrSettings = errors.New("invalid detectors section")

// Threshold is a number a detector compares what it saw against. The
// default is what the catalog documents; retrace.yaml's detectors:
// section may set another per detector:
//
//	detectors:
//	  denial_loop:
//	    min_denials: 5
type Threshold struct {
	// Name is the snake_case key under the detector's id.
	Name string `json:"name"`
	// Default is the value a run uses unless the configuration sets one.
	Default float64 `json:"default"`
	// Count is set when the value is a number of things: a setting must
	// then be a whole number.
	Count bool `json:"count,omitempty"`
	// Doc says what the value bounds, with its unit.
	Doc string `json:"doc"`
	// Value is the value configured for a run, when it is set; Info
	// leaves it nil (retrace detect --list fills it in).
	Value *float64 `json:"value,omitempty"`
}

// Settings are the thresholds a configuration sets: detector id, then
// threshold name, then value. What it leaves out keeps its default.
type Settings map[string]map[string]float64

// Where names the place of a setting in the configuration, as "file:line",
// for messages; nil names none.
type Where func(id, name string) string

// Check reports every setting of s that ds does not declare, and every
// value that is negative or, for a count, not a whole number. where
// names each bad setting's place in the configuration.
func (s Settings) Check(ds []Detector, where Where) error {
	declared := map[string][]Threshold{}
	var ids []string
	for _, d := range ds {
		declared[d.Info().ID] = d.Info().Thresholds
		ids = append(ids, d.Info().ID)
	}
	place := func(id, name string) string {
		if where == nil {
			return ""
		}
		if at := where(id, name); at != "" {
			return at + ": "
		}
		return ""
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(s)) {
		ts, ok := declared[id]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: %sdetectors.%s: no such detector; the detectors are: %s", ErrSettings, place(id, ""), id, strings.Join(ids, ", ")))
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(s[id])) {
			v := s[id][name]
			i := slices.IndexFunc(ts, func(t Threshold) bool { return t.Name == name })
			switch {
			case i < 0 && len(ts) == 0:
				errs = append(errs, fmt.Errorf("%w: %sdetectors.%s.%s: %s has no thresholds", ErrSettings, place(id, name), id, name, id))
			case i < 0:
				errs = append(errs, fmt.Errorf("%w: %sdetectors.%s.%s: no such threshold; %s has %s", ErrSettings, place(id, name), id, name, id, thresholdNames(ts)))
			case v < 0 || math.IsNaN(v) || math.IsInf(v, 0):
				errs = append(errs, fmt.Errorf("%w: %sdetectors.%s.%s: %v is not a threshold; give a number of 0 or more", ErrSettings, place(id, name), id, name, v))
			case ts[i].Count && v != math.Trunc(v):
				errs = append(errs, fmt.Errorf("%w: %sdetectors.%s.%s: %v is not a whole number; %s counts %s", ErrSettings, place(id, name), id, name, v, name, ts[i].Doc))
			}
		}
	}
	return errors.Join(errs...)
}

func thresholdNames(ts []Threshold) string {
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
	}
	return strings.Join(names, ", ")
}

// Params are one detector's thresholds for one run: its defaults, with
// what the Settings set.
type Params struct {
	id     string
	values map[string]float64
}

// params returns the thresholds d runs with under s.
func (s Settings) params(d Detector) Params {
	in := d.Info()
	p := Params{id: in.ID, values: map[string]float64{}}
	for _, t := range in.Thresholds {
		p.values[t.Name] = t.Default
		if v, ok := s[in.ID][t.Name]; ok {
			p.values[t.Name] = v
		}
	}
	return p
}

// Float returns the threshold name. Asking for a threshold the detector
// does not declare is a bug in the detector, which the fixture tests run
// into, so it panics rather than running on a zero.
func (p Params) Float(name string) float64 {
	v, ok := p.values[name]
	if !ok {
		panic(fmt.Sprintf("detector %s reads threshold %q, which its Info does not declare", p.id, name))
	}
	return v
}

// Int returns a count threshold.
func (p Params) Int(name string) int { return int(p.Float(name)) }

// expand puts the thresholds into an SQL detector's query: ${name}
// becomes the value, as a literal. An unknown name is an error.
func (p Params) expand(q string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(q, "${")
		if i < 0 {
			b.WriteString(q)
			return b.String(), nil
		}
		j := strings.IndexByte(q[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("detector %s: an unclosed ${ in its query", p.id)
		}
		name := q[i+2 : i+j]
		v, ok := p.values[name]
		if !ok {
			return "", fmt.Errorf("detector %s: its query reads threshold %q, which its Info does not declare", p.id, name)
		}
		b.WriteString(q[:i])
		b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
		q = q[i+j+1:]
	}
}
