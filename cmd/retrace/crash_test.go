//go:build unix

package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

var (
	crashTrials   = flag.Int("crash.trials", 12, "how many times TestRunKilledWithSIGKILL kills a session at a random moment")
	crashMaxDelay = flag.Duration("crash.max-delay", 2*time.Second, "the latest moment after its start a crash-test session is killed")
	crashSeed     = flag.Uint64("crash.seed", 0, "seed of the kill moments (0: a new one each run, logged)")
)

// crashTurns is the length of the scripted session; it is far longer than
// crash.max-delay, so every kill lands mid-session.
const crashTurns = 200

// crashCommand is turn i's bash call: a side effect at once, another from a
// subshell (a grandchild of retrace) 300 ms later, then a short sleep. A
// process that outlived retrace would make the second marker appear after
// the kill.
func crashCommand(i int) string {
	return fmt.Sprintf("touch m/a_%03d; (sleep 0.3; touch m/b_%03d); sleep 0.01", i, i)
}

// settle is how long after the kill the test takes the first look at the
// markers: the time a touch already running at the kill needs to finish
// and the tool processes' sentinels need to kill their groups, on a busy
// machine (a CI runner, or 2 cores shared by many builds). It is well
// below the 300 ms after which a surviving subshell would touch its
// marker.
const settle = 120 * time.Millisecond

// crashSession writes a workspace whose policy allows every command and a
// script of crashTurns bash calls, and returns the arguments of the run.
func crashSession(t *testing.T) (ws, runs string, args []string) {
	t.Helper()
	root := t.TempDir()
	ws, runs = filepath.Join(root, "ws"), filepath.Join(root, "runs")
	if err := os.MkdirAll(filepath.Join(ws, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The policy is the user's own (--config), which may widen; a
	// workspace's retrace.yaml may only restrict.
	configPath := filepath.Join(root, "retrace.yaml")
	if err := os.WriteFile(configPath, []byte("permissions:\n  mode: bypass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("model: crash-test\nturns:\n")
	for i := 1; i <= crashTurns; i++ {
		fmt.Fprintf(&script, "  - content:\n      - tool_use: {id: toolu_%03d, name: bash, input: {command: %q}}\n", i, crashCommand(i))
	}
	script.WriteString("  - content:\n      - text: \"done\"\n")
	scriptPath := filepath.Join(root, "script.yaml")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws, runs, []string{"run", "--script", scriptPath, "--config", configPath, "--workspace", ws, "--runs", runs,
		"--headless", "--max-turns", fmt.Sprint(crashTurns + 5), "Touch the markers."}
}

// markers lists the marker files that exist.
func markers(t *testing.T, ws string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(ws, "m"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// sessionProcesses lists the live processes whose working directory is the
// workspace, which every tool process of the session has, from /proc;
// where there is no /proc it finds none.
func sessionProcesses(t *testing.T, ws string) []string {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found []string
	for _, d := range dirs {
		cwd, err := os.Readlink(filepath.Join(d, "cwd"))
		if err != nil || (cwd != ws && !strings.HasPrefix(cwd, ws+string(filepath.Separator))) {
			continue // gone, a zombie, not ours, or not readable
		}
		comm, _ := os.ReadFile(filepath.Join(d, "comm"))
		found = append(found, filepath.Base(d)+" "+strings.TrimSpace(string(comm)))
	}
	return found
}

// onDisk is what a killed session's trajectory holds.
type onDisk struct {
	path   string
	events []trajectory.Event
	torn   bool // the last line has no newline
	calls  map[string]bool
	allows map[string]bool
	ends   map[string]bool
}

// readKilled decodes every complete line of the runs directory's only
// trajectory, failing on any line that does not decode and on any gap in
// seq: a complete line that was written is never lost.
func readKilled(t *testing.T, runs string) *onDisk {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(runs, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		return nil
	}
	if len(files) > 1 {
		t.Fatalf("the runs directory holds %d trajectories, want one: %q", len(files), files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	d := &onDisk{path: files[0], calls: map[string]bool{}, allows: map[string]bool{}, ends: map[string]bool{}}
	if len(data) == 0 {
		t.Fatalf("%s is empty: a trajectory must appear with its session_start", files[0])
	}
	complete := data
	if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
		d.torn, complete = true, data[:i+1]
	}
	for n, line := range bytes.SplitAfter(complete, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		ev, err := trajectory.NewDecoder(bytes.NewReader(line), files[0]).Next()
		if err != nil {
			t.Fatalf("%s: complete line %d does not decode: %v", files[0], n+1, err)
		}
		if ev.Seq != int64(len(d.events)+1) {
			t.Fatalf("%s: line %d has seq %d, want %d: an event was lost", files[0], n+1, ev.Seq, len(d.events)+1)
		}
		d.events = append(d.events, ev)
		switch p := ev.Payload.(type) {
		case *trajectory.ToolCall:
			d.calls[p.ToolUseID] = true
		case *trajectory.PermissionAllow:
			d.allows[p.ToolUseID] = true
		case *trajectory.ToolEnd:
			d.ends[p.ToolUseID] = true
		}
	}
	if len(d.events) == 0 || d.events[0].Type() != trajectory.TypeSessionStart {
		t.Fatalf("%s does not start with a complete session_start (torn: %v)", files[0], d.torn)
	}
	return d
}

// validates runs the project's own validator, the CLI, on a trajectory:
// exit 0, warnings allowed (a torn last line, no session_end).
func validates(t *testing.T, bin, path string) {
	t.Helper()
	out, err := exec.Command(bin, "validate", path).CombinedOutput()
	if err != nil {
		t.Fatalf("retrace validate %s: %v\n%s", path, err, out)
	}
}

// TestRunKilledWithSIGKILL builds the retrace binary once and kills its
// sessions: at random moments of a long bash session, and during the
// workspace snapshot.
func TestRunKilledWithSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the retrace binary and kills it repeatedly")
	}
	bin := buildRetrace(t, t.TempDir())
	t.Run("at random moments, every side effect has its tool_call on disk and none happens after the kill", func(t *testing.T) {
		killAtRandomMoments(t, bin)
	})
	t.Run("during the workspace snapshot, the file holds session_start and validates", func(t *testing.T) {
		killDuringSnapshot(t, bin)
	})
}

func killAtRandomMoments(t *testing.T, bin string) {
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("kill moments from -crash.seed=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var total struct {
		files, noFile, torn, markers, inFlight, ended, events int
	}
	for trial := 1; trial <= *crashTrials; trial++ {
		ws, runs, args := crashSession(t)
		delay := time.Duration(rng.Int64N(int64(*crashMaxDelay)))
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err == nil {
			t.Fatalf("trial %d: the session finished before the kill at %v; raise crashTurns", trial, delay)
		}
		time.Sleep(settle)
		atKill := markers(t, ws)
		time.Sleep(700 * time.Millisecond) // past the subshell's delay, with room
		if later := markers(t, ws); !slices.Equal(later, atKill) {
			var late []string
			for _, m := range later {
				if !slices.Contains(atKill, m) {
					late = append(late, m)
				}
			}
			t.Fatalf("trial %d (kill at %v): markers %q appeared after the kill (%d before): a tool process outlived retrace",
				trial, delay, late, len(atKill))
		}

		if left := sessionProcesses(t, ws); len(left) > 0 {
			t.Fatalf("trial %d (kill at %v): processes still run in the workspace after the kill: %q", trial, delay, left)
		}

		d := readKilled(t, runs)
		if d == nil {
			// Killed before session_start reached the file: then no tool ran.
			if len(atKill) != 0 {
				t.Fatalf("trial %d (kill at %v): no trajectory, but %d markers", trial, delay, len(atKill))
			}
			total.noFile++
			continue
		}
		validates(t, bin, d.path)
		for _, m := range atKill {
			id := "toolu_" + m[2:]
			if !d.calls[id] || !d.allows[id] {
				t.Fatalf("trial %d (kill at %v): marker %s exists, but %s has tool_call %v, permission_allow %v on disk",
					trial, delay, m, id, d.calls[id], d.allows[id])
			}
		}
		have := map[string]bool{}
		for _, m := range atKill {
			have[m] = true
		}
		for id := range d.ends {
			n := strings.TrimPrefix(id, "toolu_")
			if !have["a_"+n] || !have["b_"+n] {
				t.Fatalf("trial %d: %s has its tool_end on disk but not both of its markers", trial, id)
			}
		}
		total.files++
		total.events += len(d.events)
		total.markers += len(atKill)
		total.ended += len(d.ends)
		total.inFlight += len(d.calls) - len(d.ends)
		if d.torn {
			total.torn++
		}
	}
	if total.markers == 0 {
		t.Fatalf("%d kills and no marker: no session got as far as a tool call, so nothing was tested (%d ended before session_start)", *crashTrials, total.noFile)
	}
	t.Logf("%d kills: %d trajectories (%d events, %d with a torn last line), %d before session_start; %d markers, all with tool_call and permission_allow on disk; %d calls ended, %d in flight at the kill; no marker appeared after a kill",
		*crashTrials, total.files, total.events, total.torn, total.noFile, total.markers, total.ended, total.inFlight)
}

func killDuringSnapshot(t *testing.T, bin string) {
	ws, runs, args := crashSession(t)
	// A workspace large enough that its snapshot takes a while: 2000 files
	// of 16 KiB, all different.
	chunk := bytes.Repeat([]byte("retrace crash test\n"), 16<<10/19)
	for i := range 2000 {
		dir := filepath.Join(ws, "src", fmt.Sprintf("d%02d", i%40))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.txt", i)), append([]byte(fmt.Sprint(i)), chunk...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill as soon as the trajectory has a name: it has one from
	// session_start on, and the snapshot starts right after.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if files, _ := filepath.Glob(filepath.Join(runs, "*.jsonl")); len(files) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("no trajectory appeared within 20 s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	d := readKilled(t, runs)
	if d == nil {
		t.Fatal("the trajectory vanished")
	}
	for _, ev := range d.events {
		if ev.Type() == trajectory.TypeWorkspaceSnapshot {
			t.Fatalf("the snapshot finished before the kill (%d events on disk); make the workspace larger", len(d.events))
		}
	}
	validates(t, bin, d.path)
	rep, err := trajectory.ValidateFile(d.path)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("validate: %v %v", rep.Problems, err)
	}
	var warned bool
	for _, w := range rep.Warnings {
		warned = warned || strings.Contains(w.Msg, "process died")
	}
	if !warned {
		t.Errorf("the warnings %v do not explain the file as a session whose process died", rep.Warnings)
	}
}
