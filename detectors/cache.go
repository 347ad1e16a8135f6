package detectors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/metrics"
)

// What the Go detectors find in a file is a function of the file's events
// and of the detectors' code and thresholds. A store (metrics.Options.Path)
// keeps it, per file, under the file's mark (metrics.Mark: its stat, where
// its last complete line ends and hashes of its ends), as an annex of kind
// annexKind: a later detect over the unchanged file takes the findings
// from the store and does not read the file. A file that changed, grew or
// was replaced has another mark, and its findings are found again.
//
// An annex is a line per key: a detector's key (cacheKey: its id and a
// hash of the catalog's version and its thresholds), a tab and its
// findings in the file as JSON (without the title and next step its Info
// gives every finding); and livenessKey, a tab and the file's liveness
// rows. Lines, not one JSON object, so that a detect reads the keys
// without decoding the findings of the detectors it does not run. A run takes
// a file's annex only when it holds every key the run needs; what it
// finds anew in a file is added to the keys kept (others' thresholds stay).
//
// The SQL detectors judge the corpus, not a file: what they find is a
// function of every row the store holds, which metrics.DB.RowsMark marks.
// The store keeps it as one annex of kind corpusAnnexKind with that mark,
// and a detect over a store whose rows did not change since takes it
// instead of running the queries.
//
// A store is read under a shared lock, read-only (package store): a
// detect that finds files with nothing kept for them returns
// metrics.ErrStale before it reads anything, and store.Open runs it again
// on the store opened for writing, alone, where the findings are found and
// kept. So the first detect after a metrics-only update pays for reading
// the files once, and every detect after it reads none.

// annexKind is the kind of the Go detectors' annexes in a store.
const annexKind = "detectors"

// corpusAnnexKind is the kind of the SQL detectors' annex in a store: one
// for the corpus (see corpusFindings).
const corpusAnnexKind = "detectors-corpus"

// annexFormat names the layout of an annex and of the findings in it;
// change it when they change, or when a detector finds otherwise in a
// way neither its Info nor the build's version tells.
const annexFormat = "detectors-2"

// catalogVersion is a hash of annexFormat, the build's version (module
// version and VCS revision, when the binary carries them) and every
// detector's Info: findings kept by another build, or by a catalog whose
// detectors say otherwise, are not taken.
var catalogVersion = sync.OnceValue(func() string {
	h := sha256.New()
	h.Write([]byte(annexFormat))
	if bi, ok := debug.ReadBuildInfo(); ok {
		h.Write([]byte("\x00" + bi.Main.Version))
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.time" || s.Key == "vcs.modified" {
				h.Write([]byte("\x00" + s.Key + "=" + s.Value))
			}
		}
	}
	for _, d := range catalog {
		b, _ := json.Marshal(d.Info())
		h.Write(append([]byte{0}, b...))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
})

// livenessKey is the key of a file's liveness rows in an annex.
func livenessKey() string { return "liveness@" + catalogVersion() }

// cacheKey is the key of detector k's findings in an annex: its id, and a
// hash of the catalog's version and the thresholds it runs with.
func (pl plan) cacheKey(k int) string {
	p := pl.params[k]
	names := make([]string, 0, len(p.values))
	for n := range p.values {
		names = append(names, n)
	}
	slices.Sort(names)
	h := sha256.New()
	h.Write([]byte(catalogVersion()))
	for _, n := range names {
		h.Write([]byte("\x00" + n + "=" + strconv.FormatFloat(p.values[n], 'g', -1, 64)))
	}
	return pl.ds[k].Info().ID + "@" + hex.EncodeToString(h.Sum(nil)[:8])
}

// kept are the keys of what the plan finds per file: one per Go
// detector, by its index in the plan, and livenessKey when dead_defense
// runs.
type kept struct {
	keys map[int]string
	live string
	// infos are the Go detectors' Info, by index: a finding is kept
	// without the title and next step its detector's Info gives every
	// finding, which are most of its bytes.
	infos map[int]Info
}

func (pl plan) kept() kept {
	k := kept{keys: map[int]string{}, infos: map[int]Info{}}
	for i, d := range pl.ds {
		if _, ok := d.(*goDetector); ok {
			k.keys[i] = pl.cacheKey(i)
			k.infos[i] = d.Info()
		}
	}
	if pl.dead != nil {
		k.live = livenessKey()
	}
	return k
}

// take returns what an annex keeps of every key k needs, and false when
// it lacks one (or does not decode: it is found again).
func (k kept) take(annex map[string]string) (*fileResult, bool) {
	res := &fileResult{}
	for _, i := range slices.Sorted(maps.Keys(k.keys)) {
		raw, ok := annex[k.keys[i]]
		if !ok {
			return nil, false
		}
		if raw == "[]" {
			// Most detectors find nothing in most files.
			continue
		}
		var fs []Finding
		if err := json.Unmarshal([]byte(raw), &fs); err != nil {
			return nil, false
		}
		in := k.infos[i]
		for j := range fs {
			f := &fs[j]
			if f.Title == "" {
				f.Title = in.Title
			}
			if f.NextStep == "" {
				f.NextStep = in.NextStep
			}
		}
		res.findings = append(res.findings, fs...)
	}
	if k.live != "" {
		raw, ok := annex[k.live]
		if !ok {
			return nil, false
		}
		var kl keptLiveness
		if err := json.Unmarshal([]byte(raw), &kl); err != nil {
			return nil, false
		}
		res.live = kl.liveness()
	}
	return res, true
}

// put adds what res found to annex, under k's keys: each Go detector's
// findings by the detector's id (id maps the plan's index to it).
func (k kept) put(id map[int]string, res *fileResult, annex map[string]string) error {
	by := map[string][]Finding{}
	for _, f := range res.findings {
		by[f.Detector] = append(by[f.Detector], f)
	}
	for i, key := range k.keys {
		fs := slices.Clone(by[id[i]])
		if fs == nil {
			fs = []Finding{}
		}
		in := k.infos[i]
		for j := range fs {
			f := &fs[j]
			if f.Title == in.Title {
				f.Title = ""
			}
			if f.NextStep == in.NextStep {
				f.NextStep = ""
			}
		}
		b, err := json.Marshal(fs)
		if err != nil {
			return err
		}
		annex[key] = string(b)
	}
	if k.live != "" {
		b, err := json.Marshal(res.live.kept())
		if err != nil {
			return err
		}
		annex[k.live] = string(b)
	}
	return nil
}

// complete gathers in sink what the Go detectors find in the files db
// holds events of that the load's pass did not observe (seen), whose
// results the pass gave sink already: taken from the store's annexes
// where it keeps them for the file as it holds it, else read again
// (readFiles). On a store
// opened for writing, what was found in a file the store holds whole is
// kept (the annexes sink spooled). On a store opened read-only, a file it
// holds whole without findings kept is metrics.ErrStale, before anything
// is read: the caller (store.Open) runs the detect again on the store
// opened for writing.
func (pl plan) complete(ctx context.Context, db *metrics.DB, seen map[string]bool, sink *collector) (readResult, error) {
	files, err := loadedFiles(ctx, db)
	if err != nil {
		return readResult{}, err
	}
	held, err := db.HeldFiles(ctx)
	if err != nil {
		return readResult{}, fmt.Errorf("detect: %w", err)
	}
	loaded := make(map[string]bool, len(files))
	for _, f := range files {
		loaded[f] = true
	}
	// taken are the files whose annexes held every key, folded into sink
	// one at a time as the store gives them.
	taken := map[string]bool{}
	if held != nil {
		err := db.EachAnnex(ctx, annexKind, func(a metrics.Annex) error {
			f := a.File
			h, isHeld := held[f]
			if seen[f] || !loaded[f] || !isHeld || !h.Whole || a.Mark != h.Mark {
				return nil
			}
			m, ok := decodeAnnex(a.Value)
			if !ok {
				return nil
			}
			res, ok := sink.k.take(m)
			if !ok {
				// Read again; what is found is added to the annex.
				sink.base[f] = m
				return nil
			}
			taken[f] = true
			sink.fold(f, res)
			return nil
		})
		if err != nil {
			return readResult{}, fmt.Errorf("detect: %w", err)
		}
	}
	// partial are the files read again that the store holds not whole: a
	// copy of a session it loaded from another file is left out of them.
	var unseen, missing, partial []string
	for _, f := range files {
		if seen[f] || taken[f] {
			continue
		}
		if h, isHeld := held[f]; isHeld && h.Whole {
			missing = append(missing, f)
		} else if isHeld {
			partial = append(partial, f)
		}
		unseen = append(unseen, f)
	}
	if len(missing) > 0 && !db.KeepsAnnexes() {
		return readResult{}, fmt.Errorf("detect: the findings in %d files are not kept in the store yet: %w", len(missing), metrics.ErrStale)
	}
	keep, err := db.SessionsOf(ctx, partial)
	if err != nil {
		return readResult{}, fmt.Errorf("detect: %w", err)
	}
	unread, err := pl.readFiles(ctx, unseen, keep, sink)
	if err != nil {
		return readResult{}, err
	}
	var spoolErr error
	if err := db.KeepAnnexes(ctx, annexKind, sink.annexes(held, &spoolErr)); err != nil && !errors.Is(err, metrics.ErrStale) {
		return readResult{}, fmt.Errorf("detect: %w", err)
	}
	if spoolErr != nil {
		return readResult{}, fmt.Errorf("detect: the findings spooled for the store: %w", spoolErr)
	}
	return sink.result(unread), nil
}

// corpusAnnex is the SQL detectors' annex: the mark of the rows they
// judged and their findings by key (cacheKey).
type corpusAnnex struct {
	Rows     string               `json:"rows"`
	Findings map[string][]Finding `json:"findings"`
}

// corpusFindings runs the plan's SQL detectors over db, or takes what
// they found from the store when it holds the same rows as when they ran
// with the same thresholds; a store opened for writing keeps what they
// find, and one opened read-only that does not keep it yet is
// metrics.ErrStale (store.Open runs the detect again on the store opened
// for writing). dead_defense is left out: finish tabulates it from the
// pass.
func (pl plan) corpusFindings(ctx context.Context, db *metrics.DB) ([]Finding, error) {
	keys := map[int]string{}
	for i, d := range pl.ds {
		if _, ok := d.(*sqlDetector); ok {
			keys[i] = pl.cacheKey(i)
		}
	}
	rows, ok, err := db.RowsMark(ctx)
	if err != nil {
		return nil, fmt.Errorf("detect: %w", err)
	}
	var ca corpusAnnex
	if ok {
		v, err := db.CorpusAnnex(ctx, corpusAnnexKind)
		if err != nil {
			return nil, fmt.Errorf("detect: %w", err)
		}
		if v != "" && json.Unmarshal([]byte(v), &ca) == nil && ca.Rows == rows && allKept(keys, ca) {
			var out []Finding
			for _, i := range slices.Sorted(maps.Keys(keys)) {
				out = append(out, ca.Findings[keys[i]]...)
			}
			return out, nil
		}
		if len(keys) > 0 && !db.KeepsAnnexes() {
			return nil, fmt.Errorf("detect: the SQL detectors' findings over the rows the store holds now are not kept yet: %w", metrics.ErrStale)
		}
	}
	var out []Finding
	var found map[string][]Finding
	err = db.WithLessMemory(ctx, sqlDetectorsMemory, func() error {
		out, found = nil, map[string][]Finding{}
		for i, d := range pl.ds {
			if _, ok := d.(*deadDefense); ok {
				continue
			}
			fs, err := d.Corpus(ctx, db, pl.params[i])
			if err != nil {
				return err
			}
			out = append(out, fs...)
			if key, ok := keys[i]; ok {
				found[key] = append([]Finding{}, fs...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !ok || !db.KeepsAnnexes() || len(found) == 0 {
		return out, nil
	}
	if ca.Rows != rows || ca.Findings == nil {
		ca = corpusAnnex{Rows: rows, Findings: map[string][]Finding{}}
	}
	maps.Copy(ca.Findings, found)
	b, err := json.Marshal(ca)
	if err != nil {
		return nil, fmt.Errorf("detect: %w", err)
	}
	if err := db.KeepAnnexes(ctx, corpusAnnexKind, slices.Values([]metrics.Annex{{Value: string(b)}})); err != nil {
		return nil, fmt.Errorf("detect: %w", err)
	}
	return out, nil
}

// sqlDetectorsMemory is DuckDB's cap while the SQL detectors run over a
// store at the cap it set by itself (metrics.DB.WithLessMemory): their
// queries hold much outside the cap, and a detect at 10M events peaked
// in them.
const sqlDetectorsMemory = "250MB"

// allKept reports whether ca holds every key of keys.
func allKept(keys map[int]string, ca corpusAnnex) bool {
	for _, k := range keys {
		if _, ok := ca.Findings[k]; !ok {
			return false
		}
	}
	return true
}

// encodeAnnex writes an annex: a line per key, in key order, the key and
// its JSON value split by a tab. JSON escapes every newline in a string,
// and keys hold no tab or newline.
func encodeAnnex(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k)
		b.WriteByte('\t')
		b.WriteString(m[k])
		b.WriteByte('\n')
	}
	return b.String()
}

// decodeAnnex reads what encodeAnnex wrote, and false for anything else.
func decodeAnnex(v string) (map[string]string, bool) {
	m := map[string]string{}
	for v != "" {
		line, rest, ok := strings.Cut(v, "\n")
		if !ok {
			return nil, false
		}
		k, val, ok := strings.Cut(line, "\t")
		if !ok {
			return nil, false
		}
		m[k] = val
		v = rest
	}
	return m, true
}
