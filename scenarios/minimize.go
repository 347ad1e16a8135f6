package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/trajectory"
)

// DefaultMaxRuns bounds the scenario runs of a minimization that sets
// no bound.
const DefaultMaxRuns = 300

// MinimizeOptions tune From's minimization (delta debugging, Zeller's
// ddmin) of a scenario kept to one property.
type MinimizeOptions struct {
	// MaxRuns bounds the scenario runs spent (DefaultMaxRuns when 0);
	// once spent, the smallest scenario found so far is the result.
	MaxRuns int
	// Jobs is how many runs go at once (1 when 0). The result does not
	// depend on it: of the reductions tried together, the first in
	// ddmin's order that keeps the property wins, as it would one by one.
	Jobs int
	// Progress, when set, is told after each round the runs spent and
	// the turns and files left.
	Progress func(runs, turns, files int)
}

// MinimizeSummary says what a minimization reduced and what it cost.
type MinimizeSummary struct {
	TurnsBefore, TurnsAfter int
	CallsBefore, CallsAfter int
	FilesBefore, FilesAfter int
	BytesBefore, BytesAfter int
	// ConfigBefore and ConfigAfter count the config overlay's keys
	// (leaves such as defenses.disable); EventsBefore and EventsAfter
	// the recorded events an exhibit carries.
	ConfigBefore, ConfigAfter int
	EventsBefore, EventsAfter int
	// Runs is how many scenario runs it spent; Exhausted says it stopped
	// at MaxRuns before ddmin was done.
	Runs      int
	Exhausted bool
}

// String says the summary in one line.
func (m MinimizeSummary) String() string {
	s := fmt.Sprintf("minimized in %d runs: turns %d -> %d, tool calls %d -> %d", m.Runs, m.TurnsBefore, m.TurnsAfter, m.CallsBefore, m.CallsAfter)
	if m.EventsBefore > 0 {
		s += fmt.Sprintf(", recorded events %d -> %d", m.EventsBefore, m.EventsAfter)
	} else {
		s += fmt.Sprintf(", config keys %d -> %d, workspace files %d -> %d", m.ConfigBefore, m.ConfigAfter, m.FilesBefore, m.FilesAfter)
	}
	s += fmt.Sprintf(", bytes %d -> %d", m.BytesBefore, m.BytesAfter)
	if m.Exhausted {
		s += " (stopped at --max-runs; a smaller one may exist)"
	}
	return s
}

// minimizer re-runs reduced scenarios and counts the runs.
type minimizer struct {
	ctx   context.Context
	g     *generator
	files []workspaceFile
	opts  MinimizeOptions
	runs  int
	memo  map[string]bool
	mu    sync.Mutex
}

// LargeFile is the number of lines from which minimization also drops
// the lines of a workspace file, not only the whole file: a smaller one
// reads at a glance, and each line costs runs.
const LargeFile = 50

// reduction is one candidate of the runtime scenario's minimization:
// the turns kept, the tool_use blocks kept of some turns, the config
// leaves kept, the workspace files kept and the lines kept of some of
// them.
type reduction struct {
	turns  []int
	calls  map[int][]int
	config []int
	files  []int
	lines  map[int][]int
}

func (r reduction) key() string { return fmt.Sprint(r.turns, r.calls, r.config, r.files, r.lines) }

// minimize reduces g's turns, then the tool calls within them, then the
// leaves of the config overlay, then the workspace files, then the lines
// of the large files left, to a smallest set that still shows the kept
// property, re-running each reduction.
func (g *generator) minimize(ctx context.Context, files []workspaceFile, opts MinimizeOptions) ([]workspaceFile, MinimizeSummary, error) {
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = DefaultMaxRuns
	}
	opts.Jobs = max(opts.Jobs, 1)
	m := &minimizer{ctx: ctx, g: g, files: files, opts: opts, memo: map[string]bool{}}
	leaves := g.configLeaves()
	sum := MinimizeSummary{TurnsBefore: len(g.turns), CallsBefore: g.scriptCalls(g.turns), FilesBefore: len(files), BytesBefore: len(g.archive(files)), ConfigBefore: len(leaves)}
	cur := reduction{turns: indexes(len(g.turns)), calls: map[int][]int{}, config: indexes(len(leaves)), files: indexes(len(files)), lines: map[int][]int{}}
	ok, err := m.try(cur)
	if err != nil {
		return nil, sum, err
	}
	if !ok {
		return nil, sum, fmt.Errorf("%w: the scenario kept to %s does not pass as it is, so there is nothing to minimize: run it with retrace eval to see why", ErrFrom, g.keep)
	}
	progress := func(int) { m.progress(len(cur.turns), len(cur.files)) }
	cur.turns, err = m.ddmin(cur.turns, func(c []int) (bool, error) { r := cur; r.turns = c; return m.try(r) }, func(n int) { m.progress(n, len(cur.files)) })
	if err != nil {
		return nil, sum, err
	}
	// Then the tool calls of each turn that has several, keeping at
	// least one (a turn without its calls is a turn dropped, tried above).
	for _, t := range cur.turns {
		uses := toolUses(g.turns[t])
		if len(uses) < 2 {
			continue
		}
		kept, err := m.ddmin(uses, func(c []int) (bool, error) {
			if len(c) == 0 {
				return false, nil
			}
			r := cur
			r.calls = with(cur.calls, t, c)
			return m.try(r)
		}, progress)
		if err != nil {
			return nil, sum, err
		}
		cur.calls = with(cur.calls, t, kept)
	}
	cur.config, err = m.ddmin(cur.config, func(c []int) (bool, error) { r := cur; r.config = c; return m.try(r) }, progress)
	if err != nil {
		return nil, sum, err
	}
	cur.files, err = m.ddmin(cur.files, func(c []int) (bool, error) { r := cur; r.files = c; return m.try(r) }, func(n int) { m.progress(len(cur.turns), n) })
	if err != nil {
		return nil, sum, err
	}
	for _, f := range cur.files {
		n := len(fileLines(files[f].data))
		if n < LargeFile {
			continue
		}
		kept, err := m.ddmin(indexes(n), func(c []int) (bool, error) {
			r := cur
			r.lines = with(cur.lines, f, c)
			return m.try(r)
		}, progress)
		if err != nil {
			return nil, sum, err
		}
		if len(kept) < n {
			cur.lines = with(cur.lines, f, kept)
		}
	}
	g.turns = reduce(g.turns, cur.turns, cur.calls)
	g.reduced = true
	g.keptConfig = append([]int{}, cur.config...)
	files = cutFiles(files, cur.files, cur.lines, true)
	sum.TurnsAfter, sum.CallsAfter, sum.FilesAfter, sum.ConfigAfter = len(g.turns), g.scriptCalls(g.turns), len(files), len(cur.config)
	sum.Runs, sum.Exhausted = m.runs, m.runs >= opts.MaxRuns
	// The runs spent depend on -j, so they are in the summary, not the
	// archive, which must not.
	g.minimized = fmt.Sprintf("Minimized with ddmin to what still shows it: turns %d -> %d, tool calls %d -> %d, config keys %d -> %d, workspace files %d -> %d.", sum.TurnsBefore, sum.TurnsAfter, sum.CallsBefore, sum.CallsAfter, sum.ConfigBefore, sum.ConfigAfter, sum.FilesBefore, sum.FilesAfter)
	sum.BytesAfter = len(g.archive(files))
	return files, sum, nil
}

// fileLines cuts a file into its lines, each with its newline.
func fileLines(b []byte) []string {
	return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

// cutFiles picks the kept files and, of those in lines, the kept lines;
// with say, a cut file's lines are marked where lines were dropped.
func cutFiles(all []workspaceFile, kept []int, lines map[int][]int, say bool) []workspaceFile {
	out := make([]workspaceFile, 0, len(kept))
	for _, f := range kept {
		wf := all[f]
		if keep, ok := lines[f]; ok {
			ls := fileLines(wf.data)
			var b strings.Builder
			for _, l := range keep {
				b.WriteString(ls[l])
				if !strings.HasSuffix(ls[l], "\n") {
					b.WriteByte('\n')
				}
			}
			wf.data = []byte(b.String())
			if say {
				wf.cut = fmt.Sprintf("lines %s of its %d (ddmin kept what the property needs)", spans(plusOne(keep)), len(ls))
			}
		}
		out = append(out, wf)
	}
	return out
}

func plusOne(idx []int) []int {
	out := make([]int, len(idx))
	for i, v := range idx {
		out[i] = v + 1
	}
	return out
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func pick[T any](all []T, idx []int) []T {
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		out = append(out, all[i])
	}
	return out
}

// toolUses are the indexes of a turn's tool_use blocks.
func toolUses(t located) []int {
	var out []int
	for i, c := range t.Payload.(*trajectory.ModelResponse).Content {
		if c.Type == trajectory.BlockToolUse {
			out = append(out, i)
		}
	}
	return out
}

// with is calls with turn t's kept blocks set to c.
func with(calls map[int][]int, t int, c []int) map[int][]int {
	out := make(map[int][]int, len(calls)+1)
	for k, v := range calls {
		out[k] = v
	}
	out[t] = c
	return out
}

// reduce picks the turns, and of a turn in calls only the tool_use
// blocks it lists (its other blocks stay).
func reduce(all []located, turns []int, calls map[int][]int) []located {
	out := make([]located, 0, len(turns))
	for _, t := range turns {
		l := all[t]
		if kept, ok := calls[t]; ok {
			r := *l.Payload.(*trajectory.ModelResponse)
			var content []trajectory.ContentBlock
			for i, c := range r.Content {
				if c.Type != trajectory.BlockToolUse || slices.Contains(kept, i) {
					content = append(content, c)
				}
			}
			r.Content = content
			l.Event.Payload = &r
		}
		out = append(out, l)
	}
	return out
}

// scriptCalls counts the tool_use blocks of turns.
func (g *generator) scriptCalls(turns []located) int {
	n := 0
	for _, t := range turns {
		for _, c := range t.Payload.(*trajectory.ModelResponse).Content {
			if c.Type == trajectory.BlockToolUse {
				n++
			}
		}
	}
	return n
}

// try runs the scenario of the given turns and files and reports
// whether it passes, that is, still shows the kept property. A reduction
// past MaxRuns is not tried and counts as failing.
func (m *minimizer) try(r reduction) (bool, error) {
	if len(r.turns) == 0 {
		// A scenario needs a turn to play.
		return false, nil
	}
	return m.run(r.key(), func() []byte {
		g := *m.g
		g.turns = reduce(m.g.turns, r.turns, r.calls)
		g.leftOut, g.reduced, g.keptConfig = nil, true, append([]int{}, r.config...)
		return g.archive(cutFiles(m.files, r.files, r.lines, false))
	})
}

// run runs the scenario archive makes, once per key, and reports
// whether it passes, that is, still shows the kept property. A run past
// MaxRuns is not made and counts as failing.
func (m *minimizer) run(key string, archive func() []byte) (bool, error) {
	return m.check(key, func() (bool, error) {
		s, err := Parse(archive(), "minimize.txtar")
		if err != nil {
			// A reduction that does not parse does not show the property.
			return false, nil
		}
		res, err := Run(m.ctx, []*Scenario{s}, Options{Parallel: 1})
		if err != nil {
			return false, err
		}
		run := res.Scenarios[0].Runs[0]
		return run.Error == "" && len(run.Failures) == 0, nil
	})
}

// check runs test once per key and reports whether the reduction still
// shows the kept property, counting the run. A run past MaxRuns is not
// made and counts as failing.
func (m *minimizer) check(key string, test func() (bool, error)) (bool, error) {
	m.mu.Lock()
	if ok, seen := m.memo[key]; seen {
		m.mu.Unlock()
		return ok, nil
	}
	if m.runs >= m.opts.MaxRuns {
		m.mu.Unlock()
		return false, nil
	}
	m.runs++
	m.mu.Unlock()
	ok, err := test()
	if err != nil {
		return false, err
	}
	if m.ctx.Err() != nil {
		return false, m.ctx.Err()
	}
	m.remember(key, ok)
	return ok, nil
}

func (m *minimizer) progress(turns, files int) {
	if m.opts.Progress != nil {
		m.opts.Progress(m.runs, turns, files)
	}
}

func (m *minimizer) remember(key string, ok bool) {
	m.mu.Lock()
	m.memo[key] = ok
	m.mu.Unlock()
}

// ddmin is Zeller's delta debugging: it returns a 1-minimal subset of
// items for which test holds (test(items) holds on entry), or the
// smallest found once MaxRuns are spent. Each round splits the items
// into n chunks and tries each chunk, then each complement, in that
// order, Jobs at a time; the first that holds wins. progress is told the
// items left after each round.
func (m *minimizer) ddmin(items []int, test func([]int) (bool, error), progress func(left int)) ([]int, error) {
	// None at all is the smallest there is: tried first.
	if len(items) > 0 {
		ok, err := test(nil)
		if err != nil || ok {
			return nil, err
		}
	}
	n := 2
	for len(items) >= 2 && m.runs < m.opts.MaxRuns {
		chunks := split(items, n)
		var cands [][]int
		cands = append(cands, chunks...)
		// With two chunks each complement is the other chunk.
		if len(chunks) > 2 {
			for i := range chunks {
				cands = append(cands, complement(chunks, i))
			}
		}
		won, err := m.first(cands, test)
		if err != nil {
			return nil, err
		}
		switch {
		case won >= 0 && won < len(chunks):
			items, n = cands[won], 2
		case won >= len(chunks):
			items, n = cands[won], max(n-1, 2)
		case n >= len(items):
			return items, nil
		default:
			n = min(2*n, len(items))
		}
		progress(len(items))
	}
	return items, nil
}

// first tests cands Jobs at a time and returns the index of the first
// that holds, or -1.
func (m *minimizer) first(cands [][]int, test func([]int) (bool, error)) (int, error) {
	for lo := 0; lo < len(cands); lo += m.opts.Jobs {
		hi := min(lo+m.opts.Jobs, len(cands))
		oks := make([]bool, hi-lo)
		errs := make([]error, hi-lo)
		var wg sync.WaitGroup
		for i := lo; i < hi; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				oks[i-lo], errs[i-lo] = test(cands[i])
			}()
		}
		wg.Wait()
		for i := range oks {
			if errs[i] != nil {
				return -1, errs[i]
			}
			if oks[i] {
				return lo + i, nil
			}
		}
	}
	return -1, nil
}

// split cuts items into n chunks of nearly equal size, in order.
func split(items []int, n int) [][]int {
	var out [][]int
	start := 0
	for i := range n {
		end := start + (len(items)-start)/(n-i)
		if end > start {
			out = append(out, items[start:end])
		}
		start = end
	}
	return out
}

// complement is every chunk but the i-th, in order.
func complement(chunks [][]int, i int) []int {
	var out []int
	for j, c := range chunks {
		if j != i {
			out = append(out, c...)
		}
	}
	return out
}
