package recorder

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/retrace-dev/retrace/trajectory"
)

// ManifestVersion is the version of the workspace snapshot manifest format.
const ManifestVersion = 1

// Default snapshot caps, used when SnapshotOptions leaves them at 0.
const (
	DefaultSnapshotMaxBytes     int64 = 256 << 20
	DefaultSnapshotMaxFileBytes int64 = 32 << 20
)

// Entry types of a snapshot manifest.
const (
	EntryFile    = "file"
	EntrySymlink = "symlink"
	EntryDir     = "dir"
)

// Reasons a manifest entry's content was not stored.
const (
	SkippedTooLarge   = "too_large"
	SkippedUnreadable = "unreadable"
	SkippedSpecial    = "special"
	// SkippedSecret is a file whose name says it holds credentials
	// (SecretFileName), a credential directory (.ssh, .aws, .gnupg), or a
	// file in which the Redactor found a secret. Its content is never
	// stored, not even redacted: a redacted file restored in a replay
	// would differ from the original without saying so, where a file
	// that is missing can be reported as not captured.
	SkippedSecret = "secret"
)

// secretFileNames are the base-name patterns (path.Match) of files that hold
// credentials; SecretFileName applies them.
var secretFileNames = []string{
	".env*",
	"*.pem", "*.key", "*.p12", "*.pfx", "*.keystore", "*.jks", "*.ppk",
	"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
	".npmrc", ".pypirc", ".netrc", "_netrc", ".git-credentials", ".pgpass", ".htpasswd", ".dockercfg",
	"credentials", "credentials.json",
}

// secretDirs are directory names that hold credentials as a whole.
var secretDirs = []string{".ssh", ".gnupg", ".aws"}

// envTemplates are the suffixes of .env files that are templates meant to
// be committed (.env.example), not secrets; they are stored unless the
// Redactor finds a secret in them.
var envTemplates = []string{".example", ".sample", ".template", ".dist"}

// SecretFileName reports whether a file named name (a base name) usually
// holds credentials, and returns the pattern it matched: .env and
// .env.local (but not the templates .env.example, .env.sample,
// .env.template and .env.dist), private keys and certificates stores
// (*.pem, *.key, *.p12, *.pfx, *.keystore, *.jks, *.ppk, id_rsa, id_ed25519
// and the other SSH key names, their .pub halves excepted) and credential
// files (.npmrc, .pypirc, .netrc, .git-credentials, .pgpass, .htpasswd,
// .dockercfg, credentials, credentials.json).
func SecretFileName(name string) (pattern string, ok bool) {
	for _, p := range secretFileNames {
		if m, _ := path.Match(p, name); !m {
			continue
		}
		switch {
		case strings.HasPrefix(p, ".env") && hasAnySuffix(name, envTemplates):
			return "", false
		case strings.HasPrefix(p, "id_") && strings.HasSuffix(name, ".pub"):
			return "", false
		}
		return p, true
	}
	return "", false
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// ErrUnsafeSnapshot is wrapped by RestoreWorkspace's errors for a manifest
// entry that would write outside the destination: an absolute path, a path
// with "..", a path through a symlink, or a symlink whose target leaves the
// destination.
var ErrUnsafeSnapshot = errors.New("unsafe workspace snapshot")

// SnapshotOptions bound a workspace snapshot.
type SnapshotOptions struct {
	// MaxBytes is the most file content one snapshot stores; 0 means
	// DefaultSnapshotMaxBytes.
	MaxBytes int64
	// MaxFileBytes is the largest file a snapshot stores; 0 means
	// DefaultSnapshotMaxFileBytes.
	MaxFileBytes int64
	// Skip lists directories to leave out, such as a run directory that
	// lies inside the workspace under another name than .retrace.
	Skip []string
}

// SnapshotReport says what a snapshot holds and what it left out.
type SnapshotReport struct {
	// Files, Symlinks and Dirs count the entries recorded; Dirs counts only
	// empty directories, the others are implied by their contents.
	Files, Symlinks, Dirs int
	// Bytes is the file content stored.
	Bytes int64
	// Skipped lists the paths whose content was not stored.
	Skipped []string
	// Warnings are sentences for the user, one per kind of omission.
	Warnings []string
}

// Manifest is the JSON document a workspace snapshot reference names.
type Manifest struct {
	// Version is ManifestVersion.
	Version int `json:"version"`
	// Entries are sorted by Path.
	Entries []ManifestEntry `json:"entries"`
	// RootMode is the workspace root's permission bits, restored on the
	// destination, because the agent's tools print them (`ls -la`, `stat
	// .`) and a replay restores into a directory of its own making, 0700;
	// never with write for group or others, nor without rwx for the owner
	// (see rootMode). Optional: 0 in older manifests, and the
	// destination's mode is then left as it is.
	RootMode uint32 `json:"root_mode,omitempty"`
	// LeftOut names what the snapshot leaves out by design, each at its
	// highest level (a directory once, not its contents): .git
	// directories (LeftOutGit) and what a .gitignore matches
	// (LeftOutGitignore), at most MaxLeftOut of them, so that a replay can
	// say why a call that reads them differs. LeftOutMore counts the rest.
	// retrace's own .retrace directory and SnapshotOptions.Skip are not
	// listed: they are never the session's work.
	LeftOut     []LeftOutEntry `json:"left_out,omitempty"`
	LeftOutMore int            `json:"left_out_more,omitempty"`
}

// LeftOutEntry is a path a snapshot left out by design, and why.
type LeftOutEntry struct {
	// Path is slash-separated and relative to the workspace root.
	Path string `json:"path"`
	// Why is LeftOutGit or LeftOutGitignore.
	Why string `json:"why"`
}

// Why a snapshot left a path out by design (LeftOutEntry.Why).
const (
	// LeftOutGit: a .git directory, which a snapshot never holds.
	LeftOutGit = "git"
	// LeftOutGitignore: a path a .gitignore file matches.
	LeftOutGitignore = "gitignore"
)

// MaxLeftOut bounds the paths a manifest lists as left out by design.
const MaxLeftOut = 50

// ManifestEntry is one file, symlink or empty directory of a snapshot.
type ManifestEntry struct {
	// Path is slash-separated and relative to the workspace root.
	Path string `json:"path"`
	// Type is EntryFile, EntrySymlink or EntryDir.
	Type string `json:"type"`
	// Mode is a file's permission bits.
	Mode uint32 `json:"mode,omitempty"`
	// Size is a file's size in bytes.
	Size int64 `json:"size,omitempty"`
	// MTime is a file's modification time in Unix nanoseconds, restored
	// with it, because tools list files by it (glob puts the newest
	// first). Optional: 0 in older manifests, and the restored file then
	// has the time of its restore.
	MTime int64 `json:"mtime_ns,omitempty"`
	// Blob is the reference of a file's content; empty when Skipped.
	Blob string `json:"blob,omitempty"`
	// Link is a symlink's target, exactly as read, never followed.
	Link string `json:"link,omitempty"`
	// Skipped says why a file's content was not stored (SkippedTooLarge,
	// SkippedUnreadable, SkippedSpecial, SkippedSecret).
	Skipped string `json:"skipped,omitempty"`
	// Reason says in words why, for SkippedSecret: the name pattern or
	// the kind of secret found ("name matches *.pem", "holds a secret the
	// redactor recognises as anthropic"). It never holds the secret.
	Reason string `json:"reason,omitempty"`
}

// SnapshotWorkspace stores the workspace under root in blobs and returns the
// reference of its manifest. It honours .gitignore files at every depth and
// always leaves out .git and .retrace directories. Files that hold secrets
// — by name (SecretFileName), in a credential directory, or because the
// blobs' Redactor finds one in them — are listed as SkippedSecret with a
// Reason and their content is not stored. Symlinks are recorded
// with their targets and never followed, so a snapshot cannot pull in files
// from outside the workspace. Files over the caps are listed as skipped and
// named in rep.Warnings, so a snapshot is never silently partial. The same
// tree always gives the same manifest bytes and so the same reference.
func SnapshotWorkspace(root string, blobs *Blobs, opts SnapshotOptions) (ref string, rep SnapshotReport, err error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultSnapshotMaxBytes
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultSnapshotMaxFileBytes
	}
	info, err := os.Stat(root)
	if err != nil {
		return "", rep, fmt.Errorf("workspace snapshot: %w", err)
	}
	if !info.IsDir() {
		return "", rep, fmt.Errorf("workspace snapshot: %s is not a directory", root)
	}
	s := &snapshotter{root: root, blobs: blobs, opts: opts, rep: &rep, skipDirs: map[string]bool{}}
	for _, d := range opts.Skip {
		if abs, err := filepath.Abs(d); err == nil {
			s.skipDirs[abs] = true
		}
	}
	if s.root, err = filepath.Abs(root); err != nil {
		return "", rep, fmt.Errorf("workspace snapshot: %w", err)
	}
	if _, err := s.walk(nil, nil); err != nil {
		return "", rep, err
	}
	s.warn()
	data, err := json.Marshal(Manifest{Version: ManifestVersion, Entries: s.entries, RootMode: uint32(info.Mode().Perm()),
		LeftOut: s.leftOut, LeftOutMore: s.leftOutMore})
	if err != nil {
		return "", rep, fmt.Errorf("workspace snapshot: %w", err)
	}
	ref, _, err = blobs.Put(data)
	if err != nil {
		return "", rep, fmt.Errorf("workspace snapshot: %w", err)
	}
	return ref, rep, nil
}

type snapshotter struct {
	root    string
	blobs   *Blobs
	opts    SnapshotOptions
	rep     *SnapshotReport
	entries []ManifestEntry
	// skipDirs are the absolute paths of SnapshotOptions.Skip
	skipDirs map[string]bool
	// counts of skipped files by reason, for the warnings
	tooLarge, unreadable, special, secret int
	// what was left out by design (Manifest.LeftOut)
	leftOut     []LeftOutEntry
	leftOutMore int
}

// leaveOut records that p was left out by design.
func (s *snapshotter) leaveOut(p, why string) {
	if len(s.leftOut) == MaxLeftOut {
		s.leftOutMore++
		return
	}
	s.leftOut = append(s.leftOut, LeftOutEntry{Path: p, Why: why})
}

// walk records the directory whose path components are dir and returns how
// many entries it recorded beneath it, so that an empty directory can be
// recorded as one.
func (s *snapshotter) walk(dir []string, patterns []gitignore.Pattern) (int, error) {
	abs := filepath.Join(append([]string{s.root}, dir...)...)
	names, err := os.ReadDir(abs)
	if err != nil {
		if len(dir) == 0 {
			return 0, fmt.Errorf("workspace snapshot: %w", err)
		}
		s.unreadable++
		p := strings.Join(dir, "/")
		s.entries = append(s.entries, ManifestEntry{Path: p, Type: EntryDir, Skipped: SkippedUnreadable})
		s.rep.Skipped = append(s.rep.Skipped, p)
		return 1, nil
	}
	patterns = append(patterns[:len(patterns):len(patterns)], loadIgnore(abs, dir)...)
	matcher := gitignore.NewMatcher(patterns)
	recorded := 0
	for _, d := range names {
		name := d.Name()
		parts := append(dir[:len(dir):len(dir)], name)
		p := strings.Join(parts, "/")
		switch name {
		case ".retrace":
			continue
		case ".git":
			s.leaveOut(p, LeftOutGit)
			continue
		}
		typ := d.Type()
		if matcher.Match(parts, typ.IsDir()) {
			s.leaveOut(p, LeftOutGitignore)
			continue
		}
		full := filepath.Join(abs, name)
		switch {
		case typ.IsDir() && s.skipDirs[full]:
			continue
		case typ.IsDir() && slices.Contains(secretDirs, name):
			s.skip(ManifestEntry{Path: p, Type: EntryDir, Reason: "a credential directory (" + name + ")"}, SkippedSecret)
			recorded++
		case typ.IsDir():
			n, err := s.walk(parts, patterns)
			if err != nil {
				return 0, err
			}
			if n == 0 {
				s.entries = append(s.entries, ManifestEntry{Path: p, Type: EntryDir})
				s.rep.Dirs++
				n = 1
			}
			recorded += n
		case typ&fs.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				s.skip(ManifestEntry{Path: p, Type: EntrySymlink}, SkippedUnreadable)
			} else {
				s.entries = append(s.entries, ManifestEntry{Path: p, Type: EntrySymlink, Link: filepath.ToSlash(target)})
				s.rep.Symlinks++
			}
			recorded++
		case typ.IsRegular():
			s.file(full, p)
			recorded++
		default:
			s.skip(ManifestEntry{Path: p, Type: EntryFile}, SkippedSpecial)
			recorded++
		}
	}
	return recorded, nil
}

func (s *snapshotter) file(full, p string) {
	e := ManifestEntry{Path: p, Type: EntryFile}
	info, err := os.Lstat(full)
	if err != nil {
		s.skip(e, SkippedUnreadable)
		return
	}
	e.Mode, e.Size, e.MTime = uint32(info.Mode().Perm()), info.Size(), info.ModTime().UnixNano()
	if pat, ok := SecretFileName(path.Base(p)); ok {
		e.Reason = "the name matches " + pat
		s.skip(e, SkippedSecret)
		return
	}
	if e.Size > s.opts.MaxFileBytes || s.rep.Bytes+e.Size > s.opts.MaxBytes {
		s.skip(e, SkippedTooLarge)
		return
	}
	data, err := os.ReadFile(full)
	if err != nil {
		s.skip(e, SkippedUnreadable)
		return
	}
	// The file may have changed since Lstat; the manifest describes what was stored.
	e.Size = int64(len(data))
	if kind := s.blobs.red.Detect(data); kind != "" {
		e.Reason = "it holds a secret the redactor recognises as " + kind
		s.skip(e, SkippedSecret)
		return
	}
	// Checked clean just now, so stored without a second redaction pass.
	ref, _, err := s.blobs.store(data)
	if err != nil {
		s.skip(e, SkippedUnreadable)
		return
	}
	e.Blob = ref
	s.entries = append(s.entries, e)
	s.rep.Files++
	s.rep.Bytes += e.Size
}

func (s *snapshotter) skip(e ManifestEntry, reason string) {
	e.Skipped = reason
	s.entries = append(s.entries, e)
	s.rep.Skipped = append(s.rep.Skipped, e.Path)
	switch reason {
	case SkippedTooLarge:
		s.tooLarge++
	case SkippedSpecial:
		s.special++
	case SkippedSecret:
		s.secret++
	default:
		s.unreadable++
	}
}

func (s *snapshotter) warn() {
	sortEntries(s.entries)
	sample := func(reason string) string {
		var paths []string
		for _, e := range s.entries {
			if e.Skipped == reason && len(paths) < 3 {
				paths = append(paths, e.Path)
			}
		}
		return strings.Join(paths, ", ")
	}
	if s.tooLarge > 0 {
		s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf(
			"workspace snapshot: %d file(s) not stored because they exceed the size cap (%d MiB per file, %d MiB in all), e.g. %s; a replay will not have them — add them to .gitignore or raise the cap",
			s.tooLarge, s.opts.MaxFileBytes>>20, s.opts.MaxBytes>>20, sample(SkippedTooLarge)))
	}
	if s.secret > 0 {
		s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf(
			"workspace snapshot: %d entr(ies) that hold or look like secrets were not stored, e.g. %s; a replay will not have them and reports them as not captured",
			s.secret, sample(SkippedSecret)))
	}
	if s.unreadable > 0 {
		s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf(
			"workspace snapshot: %d entr(ies) could not be read and were not stored; a replay will not have them — check their permissions", s.unreadable))
	}
	if s.special > 0 {
		s.rep.Warnings = append(s.rep.Warnings, fmt.Sprintf(
			"workspace snapshot: %d special file(s) (sockets, pipes, devices) were not stored; a replay will not have them", s.special))
	}
}

func sortEntries(es []ManifestEntry) {
	// Sorting by path with "/" as the lowest character keeps a directory's
	// entries together and makes the order independent of the walk.
	key := func(p string) string { return strings.ReplaceAll(p, "/", "\x00") }
	slices.SortStableFunc(es, func(a, b ManifestEntry) int { return strings.Compare(key(a.Path), key(b.Path)) })
}

// loadIgnore reads dir's .gitignore, whose patterns apply below domain.
func loadIgnore(abs string, domain []string) []gitignore.Pattern {
	f, err := os.Open(filepath.Join(abs, ".gitignore"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// RestoreWorkspace recreates the snapshot whose manifest is ref in dst,
// which must be empty or not exist, with file modes, symlinks and the
// root's mode. Entries skipped at snapshot time are not restored. An entry
// that would write outside dst — an absolute path, "..", a path through a
// symlink, a symlink whose target leaves dst — is refused with an error
// wrapping ErrUnsafeSnapshot; a missing blob is an error naming the entry
// and the blob and wrapping fs.ErrNotExist. On error what was restored so
// far stays in dst for inspection.
func RestoreWorkspace(blobs *Blobs, ref string, dst string) error {
	data, err := blobs.Get(ref)
	if err != nil {
		return fmt.Errorf("workspace snapshot %s: %w", ref, err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("workspace snapshot %s: the manifest is not valid JSON: %w", ref, err)
	}
	if m.Version != ManifestVersion {
		return fmt.Errorf("workspace snapshot %s: manifest version %d is not supported (this retrace reads version %d); use the retrace that recorded it", ref, m.Version, ManifestVersion)
	}
	if err := checkManifest(m); err != nil {
		return fmt.Errorf("workspace snapshot %s: %w", ref, err)
	}
	if err := prepareDst(dst); err != nil {
		return err
	}
	for _, e := range m.Entries {
		if err := restoreEntry(blobs, dst, e); err != nil {
			return fmt.Errorf("workspace snapshot %s: %w", ref, err)
		}
	}
	if m.RootMode != 0 {
		// Last, so that a recorded read-only root does not stop the
		// entries being written into it.
		if err := os.Chmod(dst, rootMode(m.RootMode)); err != nil {
			return fmt.Errorf("restore the workspace root's mode: %w", err)
		}
	}
	return nil
}

// checkManifest refuses, before anything is written, every entry that could
// write or point outside the destination.
func checkManifest(m Manifest) error {
	links := map[string]string{}
	for _, e := range m.Entries {
		if err := checkPath(e.Path); err != nil {
			return err
		}
		switch e.Type {
		case EntryFile, EntryDir:
		case EntrySymlink:
			if e.Skipped == "" {
				links[e.Path] = e.Link
			}
		default:
			return fmt.Errorf("entry %q has unknown type %q", e.Path, e.Type)
		}
	}
	for _, e := range m.Entries {
		for dir := path.Dir(e.Path); dir != "."; dir = path.Dir(dir) {
			if _, ok := links[dir]; ok {
				return fmt.Errorf("%w: entry %q would be written through the symlink %q", ErrUnsafeSnapshot, e.Path, dir)
			}
		}
	}
	for p, target := range links {
		if err := checkLink(p, target, links); err != nil {
			return err
		}
	}
	return nil
}

func checkPath(p string) error {
	if p == "" || p == "." {
		return fmt.Errorf("%w: an entry has an empty path", ErrUnsafeSnapshot)
	}
	if strings.HasPrefix(p, "/") || filepath.IsAbs(p) || strings.ContainsRune(p, '\\') || strings.ContainsRune(p, 0) {
		return fmt.Errorf("%w: entry %q has an absolute or non-portable path", ErrUnsafeSnapshot, p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return fmt.Errorf("%w: entry %q climbs out with \"..\"", ErrUnsafeSnapshot, p)
		}
		if c == "" || c == "." {
			return fmt.Errorf("%w: entry %q is not a clean relative path", ErrUnsafeSnapshot, p)
		}
	}
	return nil
}

// maxLinkHops bounds symlink resolution, as the kernel's ELOOP does.
const maxLinkHops = 40

// checkLink resolves the symlink p's target against the snapshot's own
// symlinks — after checkManifest they are the only ones the restored tree
// can hold — and refuses a target that leaves the root at any step. A
// purely lexical check is not enough: "a -> ." and "b -> a/.." climb out.
func checkLink(p, target string, links map[string]string) error {
	hops := 0
	var resolve func(dir []string, target string) ([]string, error)
	resolve = func(dir []string, target string) ([]string, error) {
		if strings.HasPrefix(target, "/") || filepath.IsAbs(target) || strings.ContainsRune(target, 0) {
			return nil, fmt.Errorf("%w: symlink %q points to the absolute path %q", ErrUnsafeSnapshot, p, target)
		}
		cur := append([]string(nil), dir...)
		for _, c := range strings.Split(target, "/") {
			switch c {
			case "", ".":
				continue
			case "..":
				if len(cur) == 0 {
					return nil, fmt.Errorf("%w: symlink %q points outside the workspace (%q)", ErrUnsafeSnapshot, p, target)
				}
				cur = cur[:len(cur)-1]
				continue
			}
			cur = append(cur, c)
			if next, ok := links[strings.Join(cur, "/")]; ok {
				if hops++; hops > maxLinkHops {
					return nil, fmt.Errorf("%w: symlink %q is part of a loop", ErrUnsafeSnapshot, p)
				}
				var err error
				if cur, err = resolve(cur[:len(cur)-1], next); err != nil {
					return nil, err
				}
			}
		}
		return cur, nil
	}
	dir := strings.Split(p, "/")
	_, err := resolve(dir[:len(dir)-1], target)
	return err
}

func prepareDst(dst string) error {
	names, err := os.ReadDir(dst)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("restore the workspace: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("restore the workspace into %s: %w", dst, err)
	case len(names) > 0:
		return fmt.Errorf("restore the workspace into %s: the directory is not empty; give an empty or new directory", dst)
	}
	return nil
}

func restoreEntry(blobs *Blobs, dst string, e ManifestEntry) error {
	if e.Skipped != "" {
		return nil
	}
	parts := strings.Split(e.Path, "/")
	// Create the parents one by one, refusing any that is already
	// something other than a real directory, so nothing is written through
	// a symlink even when the manifest lists entries in an odd order.
	dir := dst
	for _, c := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, c)
		info, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(dir, 0o755); err != nil {
				return fmt.Errorf("restore %s: %w", e.Path, err)
			}
		case err != nil:
			return fmt.Errorf("restore %s: %w", e.Path, err)
		case !info.IsDir():
			return fmt.Errorf("%w: entry %q would be written through %q, which is not a directory", ErrUnsafeSnapshot, e.Path, c)
		}
	}
	full := filepath.Join(dir, parts[len(parts)-1])
	switch e.Type {
	case EntryDir:
		if err := os.Mkdir(full, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("restore %s: %w", e.Path, err)
		}
		if info, err := os.Lstat(full); err != nil || !info.IsDir() {
			return fmt.Errorf("%w: directory entry %q is already something else", ErrUnsafeSnapshot, e.Path)
		}
	case EntrySymlink:
		if err := os.Symlink(filepath.FromSlash(e.Link), full); err != nil {
			return fmt.Errorf("restore %s: %w", e.Path, err)
		}
	case EntryFile:
		data, err := blobs.Get(e.Blob)
		if err != nil {
			return fmt.Errorf("restore %s (blob %s): %w", e.Path, e.Blob, err)
		}
		if trajectory.BlobRef(data) != e.Blob {
			return fmt.Errorf("restore %s: blob %s does not match its content; the blob store is corrupt", e.Path, e.Blob)
		}
		// O_EXCL never overwrites and fails on an existing symlink too,
		// dangling or not, so nothing is written through a link.
		f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("restore %s: %w", e.Path, err)
		}
		_, werr := f.Write(data)
		merr := f.Chmod(fs.FileMode(e.Mode) & fs.ModePerm)
		if err := errors.Join(werr, merr, f.Close()); err != nil {
			return fmt.Errorf("restore %s: %w", e.Path, err)
		}
		if e.MTime > 0 {
			// The file was just created by O_EXCL, so this is no link.
			t := time.Unix(0, e.MTime)
			if err := os.Chtimes(full, t, t); err != nil {
				return fmt.Errorf("restore %s: %w", e.Path, err)
			}
		}
	}
	return nil
}

// rootMode is the mode a restore gives the workspace root for a recorded
// root_mode. A recording may come from someone else, and the root is a
// directory of the machine's temporary directory: group and others never
// get write (a recorded 0777 would let another user plant files in the
// replay's workspace while it runs), and the owner keeps rwx, so that the
// replay can write what the session wrote and remove the directory after.
func rootMode(recorded uint32) fs.FileMode {
	return fs.FileMode(recorded)&fs.ModePerm&^0o022 | 0o700
}
