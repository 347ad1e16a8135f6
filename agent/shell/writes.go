package shell

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// writerSpec describes a program that writes the files named by its
// operands.
type writerSpec struct {
	// valued are the short options that take a value; long the long ones
	// whose value is required (also accepted as --opt=value).
	valued string
	long   []string
	// skipFirst: the first operand is not a file (chmod's mode, chown's
	// owner, sed's script) unless an option such as --reference gives it.
	skipFirst bool
	// lastOnly: only the last operand is written (cp, ln, install); -t dir
	// names the target directory instead.
	lastOnly bool
}

// writers are the programs whose written paths the analysis reads from
// their operands.
var writers = map[string]*writerSpec{
	"rm":        {},
	"rmdir":     {},
	"unlink":    {},
	"shred":     {valued: "ns", long: []string{"--iterations", "--size", "--random-source"}},
	"touch":     {valued: "dtr", long: []string{"--date", "--reference", "--time"}},
	"mkdir":     {valued: "m", long: []string{"--mode"}},
	"truncate":  {valued: "sr", long: []string{"--size", "--reference"}},
	"chmod":     {skipFirst: true, long: []string{"--reference"}},
	"chown":     {skipFirst: true, long: []string{"--reference", "--from"}},
	"chgrp":     {skipFirst: true, long: []string{"--reference"}},
	"tee":       {},
	"mv":        {valued: "tS", long: []string{"--target-directory", "--suffix"}},
	"cp":        {valued: "tS", long: []string{"--target-directory", "--suffix", "--sparse", "--no-preserve"}, lastOnly: true},
	"ln":        {valued: "tS", long: []string{"--target-directory", "--suffix"}, lastOnly: true},
	"link":      {},
	"sponge":    {},
	"mkfifo":    {valued: "mZ", long: []string{"--mode", "--context"}},
	"fallocate": {valued: "lo", long: []string{"--length", "--offset"}},
	"install":   {valued: "mogtS", long: []string{"--mode", "--owner", "--group", "--target-directory", "--suffix"}, lastOnly: true},
}

// writeTargets records what one simple command writes: the operands of a
// writing program in Writes, or WritesUnknown when they cannot be known.
func (an *analyzer) writeTargets(fs []field) {
	avs := unwrapFields(fs)
	for k, av := range avs {
		if len(av) == 0 {
			continue
		}
		if av[0].dynamic || av[0].glob {
			an.writesUnknown = true
			continue
		}
		name := path.Base(av[0].value)
		if k < len(avs)-1 {
			// A wrapper: what it runs is the next entry. find -exec and
			// xargs feed operands known only at run time.
			if name == "find" || name == "xargs" {
				if inner := avs[k+1]; len(inner) > 0 && !inner[0].dynamic {
					innerName := path.Base(inner[0].value)
					if _, ok := writers[innerName]; ok || !isReadOnlyName(innerName) {
						an.writesUnknown = true
					}
					if _, ok := writers[innerName]; ok || fileWriters[innerName] {
						an.writesFiles = true
					}
				}
			}
			if name == "find" {
				an.findWrites(av[1:])
			}
			if outputs, ok := outputOptions[name]; ok {
				an.optionWrites(name, outputs, av[1:len(av)-len(avs[k+1])])
			}
			continue
		}
		if k > 0 {
			if prev := path.Base(avs[k-1][0].value); prev == "find" || prev == "xargs" {
				continue // its operands are only known at run time: set above
			}
		}
		if why, _ := readOnlyCall(av); why == "" {
			continue
		}
		switch name {
		case "dd":
			for _, a := range av[1:] {
				if t, ok := strings.CutPrefix(a.value, "of="); ok {
					an.writeField(a, t, "dd")
				}
			}
			continue
		case "sed":
			an.sedWrites(av[1:])
			continue
		case "tar":
			an.tarWrites(av[1:])
			continue
		case "find":
			an.findWrites(av[1:])
			continue
		}
		switch name {
		case "perl", "ruby":
			an.inPlaceWrites(name, av[1:])
			an.writesUnknown = true
			continue
		case "awk", "gawk", "mawk", "nawk":
			an.awkWrites(av[1:])
			continue
		}
		switch name {
		case "xxd", "uniq":
			// The second file operand is the output.
			an.writesUnknown = true
			if ops := plainOperands(av[1:], map[string]bool{"-c": true, "-g": true, "-l": true, "-s": true, "-o": true, "-n": true,
				"-cols": true, "-len": true, "-seek": true, "-name": true, "-groupsize": true, "-offset": true, "-f": true, "-w": true}); len(ops) > 1 {
				an.writeField(ops[1], ops[1].value, name)
			}
			continue
		case "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lzma", "unlzma", "compress", "uncompress":
			an.compressorWrites(name, av[1:])
			continue
		case "unzip":
			an.writesUnknown, an.writesFiles = true, true
			for i, a := range av[1:] {
				if a.value == "-d" && i+2 < len(av) {
					an.writeField(av[i+2], av[i+2].value, "unzip -d")
				} else if d, ok := strings.CutPrefix(a.value, "-d"); ok && d != "" && !a.dynamic {
					an.writeField(field{value: d, source: d}, d, "unzip -d")
				}
			}
			if !slices.ContainsFunc(av[1:], func(f field) bool { return strings.HasPrefix(f.value, "-d") }) {
				an.write(".")
			}
			continue
		case "git":
			an.gitWrites(av[1:])
			continue
		}
		if fileWriters[name] {
			// It writes files named inside its input (a patch, an
			// archive): what it writes is only known when it runs.
			an.writesUnknown = true
			an.writesFiles = true
			if name == "rsync" {
				an.copyDestination(name, av[1:])
			}
			continue
		}
		if name == "scp" {
			an.writesUnknown = true
			an.copyDestination(name, av[1:])
			continue
		}
		if outputs, ok := outputOptions[name]; ok {
			an.optionWrites(name, outputs, av[1:])
			continue
		}
		spec, ok := writers[name]
		if !ok {
			an.writesUnknown = true
			continue
		}
		an.specWrites(name, spec, av[1:])
	}
}

func isReadOnlyName(name string) bool {
	_, a := specs[name]
	_, b := customReadOnly[name]
	return a || b
}

// writeField records one written operand: a static path in Writes, and
// WritesUnknown for a dynamic one or a glob.
func (an *analyzer) writeField(f field, value, by string) {
	if f.dynamic {
		an.writesUnknown = true
		an.writesFiles = true
		an.notReadOnly("%s writes %s, a path only known at run time", by, f.source)
		an.checkDynamicTarget(f, by)
		return
	}
	if f.glob {
		an.writesUnknown = true
	}
	if value == "" || isHarmlessTarget(value) {
		return
	}
	an.write(value)
	for _, p := range an.relPaths(value) {
		an.checkWriteTarget(p, by)
	}
}

func (an *analyzer) specWrites(name string, s *writerSpec, args []field) {
	var ops []field
	target := field{}
	hasTarget, reference := false, false
	dashdash := false
	// symbolic: ln -s; hard: cp -l. A hard link is the file it names, so
	// making one writes that file as much as the link.
	symbolic, hard := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.value
		switch {
		case dashdash || a.dynamic || v == "-" || !strings.HasPrefix(v, "-"):
			ops = append(ops, a)
		case v == "--":
			dashdash = true
		case strings.HasPrefix(v, "--"):
			opt, val, hasVal := strings.Cut(v, "=")
			if opt == "--reference" {
				reference = true
			}
			symbolic = symbolic || opt == "--symbolic"
			hard = hard || opt == "--link"
			valField := field{value: val}
			if !hasVal && slices.Contains(s.long, opt) && i+1 < len(args) {
				i++
				valField = args[i]
			}
			if opt == "--target-directory" {
				target, hasTarget = valField, true
			}
		default:
			if name == "chmod" && looksLikeMode(v) {
				ops = append(ops, a) // chmod -x file: -x is the mode
				continue
			}
			for j := 1; j < len(v); j++ {
				c := v[j]
				symbolic = symbolic || name == "ln" && c == 's'
				hard = hard || name == "cp" && c == 'l'
				if strings.IndexByte(s.valued, c) < 0 {
					continue
				}
				valField := field{value: v[j+1:]}
				if valField.value == "" && i+1 < len(args) {
					i++
					valField = args[i]
				}
				if c == 't' && s.lastOnly || c == 't' && name == "mv" {
					target, hasTarget = valField, true
				}
				if c == 'r' && (name == "touch" || name == "truncate") {
					reference = true
				}
				break
			}
		}
	}
	if s.skipFirst && !reference && len(ops) > 0 {
		ops = ops[1:]
	}
	if (name == "ln" && !symbolic) || (name == "cp" && hard) {
		// Every source is the file a new hard link names.
		sources := ops
		if !hasTarget && len(ops) > 1 {
			sources = ops[:len(ops)-1]
		}
		for _, o := range sources {
			an.writeField(o, o.value, name+" (a hard link is the file it links to)")
		}
	}
	switch {
	case hasTarget:
		an.writeField(target, target.value, name)
		if name == "mv" {
			for _, o := range ops {
				an.writeField(o, o.value, name)
			}
		}
	case s.lastOnly:
		if len(ops) == 1 && name == "ln" {
			// ln target: the link is made in the current directory.
			an.writeField(ops[0], path.Base(ops[0].value), name)
		} else if len(ops) > 0 {
			last := ops[len(ops)-1]
			an.writeField(last, last.value, name)
		}
		if name == "install" && slices.ContainsFunc(args, func(f field) bool { return f.value == "-d" }) {
			for _, o := range ops[:max(0, len(ops)-1)] {
				an.writeField(o, o.value, name)
			}
		}
	default:
		for _, o := range ops {
			an.writeField(o, o.value, name)
		}
	}
}

// sedWrites records the files sed -i edits and the files its scripts'
// w, W and s///w commands write (sed -n "1w ~/.profile" writes a start-up
// file as surely as a redirection). A script from a file, or one only
// known at run time, makes the writes unknown.
func (an *analyzer) sedWrites(args []field) {
	explicit := false
	scriptSeen := false
	inPlace := false
	var files, scripts []field
	unknown := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.value
		switch {
		case a.dynamic:
			if !explicit && !scriptSeen {
				scriptSeen = true
				unknown = true
				continue
			}
			files = append(files, a)
		case v == "-e" || v == "--expression":
			explicit = true
			if i+1 < len(args) {
				i++
				scripts = append(scripts, args[i])
			}
		case v == "-f" || v == "--file":
			explicit, unknown = true, true
			i++
		case v == "-l" || v == "--line-length":
			i++
		case strings.HasPrefix(v, "--expression="):
			explicit = true
			scripts = append(scripts, field{value: strings.TrimPrefix(v, "--expression="), source: a.source})
		case strings.HasPrefix(v, "--file="):
			explicit, unknown = true, true
		case strings.HasPrefix(v, "--in-place") || v == "-i" || (shortFlag(v, 'i') && !strings.HasPrefix(v, "-e") && !strings.HasPrefix(v, "-f")):
			inPlace = true
			if strings.HasSuffix(v, "e") || strings.HasSuffix(v, "f") {
				explicit = true
				unknown = unknown || strings.HasSuffix(v, "f")
				if i+1 < len(args) {
					i++
					if strings.HasSuffix(v, "e") {
						scripts = append(scripts, args[i])
					}
				}
			}
		case strings.HasPrefix(v, "-e"):
			explicit = true
			scripts = append(scripts, field{value: v[2:], source: a.source})
		case strings.HasPrefix(v, "-f"):
			explicit, unknown = true, true
		case strings.HasPrefix(v, "-") && v != "-":
			if strings.HasSuffix(v, "e") || strings.HasSuffix(v, "f") {
				explicit = true
				unknown = unknown || strings.HasSuffix(v, "f")
				if i+1 < len(args) {
					i++
					if strings.HasSuffix(v, "e") {
						scripts = append(scripts, args[i])
					}
				}
			}
		default:
			if !explicit && !scriptSeen {
				scriptSeen = true
				scripts = append(scripts, a)
				continue
			}
			files = append(files, a)
		}
	}
	for _, sc := range scripts {
		if sc.dynamic {
			unknown = true
			continue
		}
		_, writes, other := sedScript(sc.value)
		unknown = unknown || other
		for _, w := range writes {
			switch w {
			case "/dev/stdout", "/dev/stderr":
			case "":
				unknown = true
			default:
				an.writeField(field{value: w, source: w}, w, "sed w")
			}
		}
	}
	if !inPlace {
		// Not read-only (the caller checked): sed w, e or an option the
		// read-only check refused.
		an.writesUnknown = true
		if unknown {
			an.writesFiles = true
		}
		return
	}
	if unknown {
		an.writesUnknown = true
	}
	for _, f := range files {
		an.writeField(f, f.value, "sed -i")
	}
}

// tarWrites records tar -c -f archive, and the -C directory of tar -x,
// whose members are unknown.
func (an *analyzer) tarWrites(args []field) {
	create, extract, absolute := false, false, false
	var archive, dir *field
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.value
		cluster := ""
		switch {
		case i == 0 && !strings.HasPrefix(v, "-") && !a.dynamic:
			cluster = v
		case v == "-C" || v == "--directory":
			if i+1 < len(args) {
				i++
				dir = &args[i]
			}
			continue
		case strings.HasPrefix(v, "--directory="):
			dir = &field{value: strings.TrimPrefix(v, "--directory=")}
			continue
		case v == "--file" && i+1 < len(args):
			i++
			archive = &args[i]
			continue
		case strings.HasPrefix(v, "--file="):
			archive = &field{value: strings.TrimPrefix(v, "--file=")}
			continue
		case v == "--create":
			create = true
			continue
		case v == "--absolute-names":
			absolute = true
			continue
		case v == "--extract" || v == "--get":
			extract = true
			continue
		case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--"):
			cluster = v[1:]
		default:
			continue
		}
		for j := 0; j < len(cluster); j++ {
			switch cluster[j] {
			case 'c', 'r', 'u', 'A':
				create = true
			case 'x':
				extract = true
			case 'P':
				absolute = true
			case 'C':
				if i+1 < len(args) {
					i++
					dir = &args[i]
				}
			case 'f':
				if rest := cluster[j+1:]; rest != "" {
					archive = &field{value: rest}
				} else if i+1 < len(args) {
					i++
					archive = &args[i]
				}
				j = len(cluster)
			}
		}
	}
	switch {
	case extract && absolute:
		// Members with absolute names are written where they say, any
		// file of the machine: a write outside the workspace.
		an.writesUnknown = true
		an.write("/")
	case extract:
		an.writesUnknown = true // the members' names are in the archive
		if dir != nil {
			an.writeField(*dir, dir.value, "tar -x")
		} else {
			an.write(".")
		}
	case create && archive != nil && archive.value != "-":
		an.writeField(*archive, archive.value, "tar -c")
	default:
		an.writesUnknown = true
	}
}

// fileWriters are programs that write files named inside their input (a
// patch, an archive, a script of edits), so that the command line never
// holds the names: they write, but where is only known when they run.
var fileWriters = map[string]bool{
	"patch": true, "unzip": true, "cpio": true, "rsync": true, "git-apply": true, "ed": true, "ex": true,
	"split": true, "csplit": true, "zip": true, "7z": true, "gzip": true, "gunzip": true, "bzip2": true,
	"bunzip2": true, "xz": true, "unxz": true, "zstd": true, "unzstd": true, "mktemp": true,
}

// outputSpec names the options of a program whose value is a file the
// program writes, besides its ordinary output: sort -o, tree -o.
type outputSpec struct {
	short string
	long  []string
}

// outputOptions are programs, most of them otherwise read-only, with an
// option that writes a file. Wrappers are here too (strace -o, time -o):
// their options come before the command they run.
var outputOptions = map[string]outputSpec{
	"sort": {"o", []string{"--output"}}, "tree": {"o", []string{"--output"}}, "base64": {"o", []string{"--output"}},
	"iconv": {"o", []string{"--output"}}, "strace": {"o", []string{"--output"}}, "ltrace": {"o", []string{"--output"}},
	"time": {"o", []string{"--output"}}, "script": {"", []string{"--log-out", "--log-in", "--log-io", "--log-timing"}},
	"ssh": {"E", nil}, "gcc": {"o", nil}, "cc": {"o", nil}, "clang": {"o", nil}, "g++": {"o", nil}, "c++": {"o", nil},
	"pandoc": {"o", []string{"--output"}}, "xmllint": {"", []string{"--output"}}, "msgfmt": {"o", []string{"--output-file"}},
	"less": {"oO", []string{"--log-file", "--LOG-FILE"}},
}

// optionWrites lists the files a program's own output options name. The
// writes stay unknown as well: the reasons the call is not read-only are
// not all read here.
func (an *analyzer) optionWrites(name string, spec outputSpec, args []field) {
	an.writesUnknown = true
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.value
		switch {
		case a.dynamic || v == "--":
			if v == "--" {
				return
			}
		case strings.HasPrefix(v, "--"):
			opt, val, hasVal := strings.Cut(v, "=")
			if !slices.Contains(spec.long, opt) {
				continue
			}
			if hasVal {
				an.writeField(field{value: val, source: val}, val, name+" "+opt)
			} else if i+1 < len(args) {
				i++
				an.writeField(args[i], args[i].value, name+" "+opt)
			}
		case strings.HasPrefix(v, "-") && len(v) > 1 && spec.short != "":
			// Clustered short options (sort -uo f) for the programs whose
			// read-only spec says which letters take a value; only the
			// first letter for the others (gcc -Wno-x is no -o).
			valued := ""
			last := 2
			if ro, ok := specs[name]; ok {
				valued, last = ro.valued, len(v)
			}
			for j := 1; j < last; j++ {
				c := v[j]
				if strings.IndexByte(spec.short, c) >= 0 {
					rest := v[j+1:]
					if rest != "" {
						an.writeField(field{value: rest, source: rest}, rest, name+" -"+string(c))
					} else if i+1 < len(args) {
						i++
						an.writeField(args[i], args[i].value, name+" -"+string(c))
					}
					break
				}
				if strings.IndexByte(valued, c) >= 0 {
					break
				}
			}
		}
	}
}

// findWrites lists the files find's own actions write (-fprint, -fprint0,
// -fprintf, -fls), and the start points -delete deletes under. The
// actions of the command -exec runs are that command's.
func (an *analyzer) findWrites(args []field) {
	var starts []field
	i := findOptions(args)
	for ; i < len(args); i++ {
		v := args[i].value
		if !args[i].dynamic && (strings.HasPrefix(v, "-") || v == "(" || v == "!") {
			break
		}
		starts = append(starts, args[i])
	}
	if len(starts) == 0 {
		starts = []field{{value: ".", source: "."}}
	}
	for ; i < len(args); i++ {
		switch args[i].value {
		case "-exec", "-execdir", "-ok", "-okdir":
			for i < len(args) && args[i].value != ";" && args[i].value != "+" {
				i++
			}
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 < len(args) {
				an.writeField(args[i+1], args[i+1].value, "find "+args[i].value)
				i++
			}
			an.writesUnknown = true
		case "-delete":
			for _, s := range starts {
				an.writeField(s, s.value, "find -delete")
			}
			an.writesUnknown = true
		}
	}
}

// copyDestination lists the last operand of rsync or scp, the destination,
// unless it is on another host: rsync -a x ~/.bashrc writes a start-up
// file like cp does.
func (an *analyzer) copyDestination(name string, args []field) {
	ops := operandFields(args)
	if len(ops) < 2 {
		return
	}
	if d := ops[len(ops)-1]; d.dynamic || !isRemote(d.value) {
		an.writeField(d, d.value, name)
	}
}

// inPlaceWrites lists the files perl -i and ruby -i edit in place: the
// operands after the script (after the script file when no -e gives
// one). It reports whether the command edits in place at all.
func (an *analyzer) inPlaceWrites(name string, args []field) bool {
	inPlace, explicit := false, false
	var ops []field
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.value
		switch {
		case a.dynamic || v == "-" || !strings.HasPrefix(v, "-"):
			ops = append(ops, a)
			continue
		case v == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
			continue
		case strings.HasPrefix(v, "--"):
			continue
		}
	cluster:
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case 'i':
				inPlace = true
				break cluster // the rest is the backup suffix
			case 'e', 'E':
				explicit = true
				if j+1 == len(v) {
					i++ // the script is the next word
				}
				break cluster
			case 'r', 'C', 'I', 'M', 'm', 'F', 'x', 'd', 'D', 'l', '0', 'K':
				if j+1 == len(v) && (v[j] == 'r' || v[j] == 'C' || (name == "ruby" && v[j] == 'I')) {
					i++ // ruby -r lib, -C dir, -I dir take the next word
				}
				break cluster
			}
		}
	}
	if !inPlace {
		return false
	}
	if !explicit && len(ops) > 0 {
		ops = ops[1:] // the script file
	}
	for _, o := range ops {
		an.writeField(o, o.value, name+" -i")
	}
	return true
}

// awkProgram returns an awk command's program text and file operands,
// and whether it edits them in place (gawk -i inplace). fromFile reports
// a program read from a file (-f), which cannot be inspected.
func awkProgram(args []field) (program field, files []field, inPlace, fromFile bool) {
	have := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.value
		switch {
		case !a.dynamic && (v == "-F" || v == "-v"):
			i++
		case !a.dynamic && (v == "-f" || v == "--file"):
			fromFile, have = true, true
			i++
		case !a.dynamic && (v == "-i" || v == "--include"):
			if i+1 < len(args) && strings.TrimSuffix(args[i+1].value, ".awk") == "inplace" {
				inPlace = true
			}
			i++
		case !a.dynamic && (v == "-e" || v == "--source"):
			if i+1 < len(args) {
				program, have = args[i+1], true
			}
			i++
		case !a.dynamic && strings.HasPrefix(v, "--source="):
			program, have = field{value: strings.TrimPrefix(v, "--source="), source: a.source}, true
		case !a.dynamic && strings.HasPrefix(v, "-i") && strings.TrimSuffix(v[2:], ".awk") == "inplace":
			inPlace = true
		case !a.dynamic && v == "--":
			for _, f := range args[i+1:] {
				if !have {
					program, have = f, true
					continue
				}
				files = append(files, f)
			}
			i = len(args)
		case !a.dynamic && strings.HasPrefix(v, "-") && len(v) > 1:
		case !have:
			program, have = a, true
		default:
			if !strings.Contains(v, "=") || a.dynamic {
				files = append(files, a)
			}
		}
	}
	return program, files, inPlace, fromFile
}

var (
	awkString   = `"((?:[^"\\\n]|\\.)*)"`
	awkSystem   = regexp.MustCompile(`\bsystem\s*\(\s*` + awkString + `\s*\)`)
	awkPipeTo   = regexp.MustCompile(`(?:^|[^|])\|&?\s*` + awkString)
	awkPipeFrom = regexp.MustCompile(awkString + `\s*\|&?\s*getline`)
	awkRedirect = regexp.MustCompile(`\bprintf?\b[^;}\n]*?>>?\s*` + awkString)
)

// awkUnquote decodes an awk string literal's escapes.
func awkUnquote(s string) string {
	return strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, "\n", `\t`, "\t", `\/`, "/").Replace(s)
}

// awkCommands returns the command lines an awk program runs through a
// shell (system("…"), print | "…", "…" | getline) when they are string
// literals, so they are analysed like sh -c scripts.
func awkCommands(program string) []field {
	var out []field
	for _, re := range []*regexp.Regexp{awkSystem, awkPipeTo, awkPipeFrom} {
		for _, m := range re.FindAllStringSubmatch(program, -1) {
			out = append(out, field{value: awkUnquote(m[1]), source: m[0]})
		}
	}
	return out
}

// awkWrites lists the files an awk command writes: print > "file" and
// print >> "file" with a literal name, and the operands of gawk -i
// inplace. A program from a file, or one only known at run time, makes
// the writes unknown.
func (an *analyzer) awkWrites(args []field) {
	an.writesUnknown = true // not read-only: the caller checked
	program, files, inPlace, fromFile := awkProgram(args)
	if inPlace {
		for _, f := range files {
			an.writeField(f, f.value, "awk -i inplace")
		}
	}
	if fromFile || program.dynamic {
		an.writesFiles = true
		return
	}
	for _, m := range awkRedirect.FindAllStringSubmatch(program.value, -1) {
		t := awkUnquote(m[1])
		if t != "/dev/stdout" && t != "/dev/stderr" && t != "-" {
			an.writeField(field{value: t, source: m[0]}, t, "awk print >")
		}
	}
}

// plainOperands returns the operands of a command whose options in valued
// take a separate value.
func plainOperands(args []field, valued map[string]bool) []field {
	var out []field
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.dynamic || a.value == "-" || !strings.HasPrefix(a.value, "-"):
			out = append(out, a)
		case a.value == "--":
			return append(out, args[i+1:]...)
		case valued[a.value]:
			i++
		}
	}
	return out
}

// compressorWrites lists the operands of gzip, xz and the like, which
// replace each file by its compressed or decompressed form, unless they
// only write to standard output, test or list.
func (an *analyzer) compressorWrites(name string, args []field) {
	an.writesUnknown, an.writesFiles = true, true
	for _, a := range args {
		v := a.value
		if v == "--stdout" || v == "--to-stdout" || v == "--test" || v == "--list" ||
			(strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.ContainsAny(v[1:], "ctl")) {
			return
		}
	}
	for _, o := range plainOperands(args, map[string]bool{"-S": true, "--suffix": true, "-T": true, "--threads": true, "-o": true}) {
		an.writeField(o, o.value, name)
	}
}

// gitWrites lists what a git command that is not read-only writes
// outside the working directory: the directory of git -C, --git-dir and
// --work-tree, and the destination of git clone. What git writes inside
// the repository is unknown.
func (an *analyzer) gitWrites(args []field) {
	an.writesUnknown = true
	i := 0
	for ; i < len(args); i++ {
		v := args[i].value
		switch {
		case (v == "-C" || v == "--git-dir" || v == "--work-tree") && i+1 < len(args):
			an.writeField(args[i+1], args[i+1].value, "git "+v)
			i++
		case strings.HasPrefix(v, "--git-dir=") || strings.HasPrefix(v, "--work-tree="):
			_, d, _ := strings.Cut(v, "=")
			an.writeField(field{value: d, source: args[i].source, dynamic: args[i].dynamic}, d, "git")
		case v == "-c" || v == "--namespace" || v == "--config-env":
			i++
		case strings.HasPrefix(v, "-"):
		default:
			goto sub
		}
	}
	return
sub:
	switch args[i].value {
	case "log", "diff", "show", "format-patch", "whatchanged", "range-diff":
		for j := i + 1; j < len(args); j++ {
			v := args[j].value
			switch {
			case strings.HasPrefix(v, "--output="):
				an.writeField(field{value: strings.TrimPrefix(v, "--output="), source: args[j].source, dynamic: args[j].dynamic}, strings.TrimPrefix(v, "--output="), "git --output")
			case (v == "--output" || v == "--output-directory" || (args[i].value == "format-patch" && v == "-o")) && j+1 < len(args):
				an.writeField(args[j+1], args[j+1].value, "git "+v)
				j++
			case strings.HasPrefix(v, "--output-directory="):
				d := strings.TrimPrefix(v, "--output-directory=")
				an.writeField(field{value: d, source: args[j].source, dynamic: args[j].dynamic}, d, "git --output-directory")
			}
		}
		return
	case "clone":
	default:
		return
	}
	var ops []field
	for j := i + 1; j < len(args); j++ {
		v := args[j].value
		switch {
		case args[j].dynamic || !strings.HasPrefix(v, "-"):
			ops = append(ops, args[j])
		case v == "-b" || v == "--branch" || v == "-o" || v == "--origin" || v == "--depth" || v == "-c" || v == "--config" ||
			v == "--reference" || v == "--separate-git-dir" || v == "-u" || v == "--upload-pack" || v == "-j" || v == "--jobs" || v == "--filter":
			if v == "--separate-git-dir" && j+1 < len(args) {
				an.writeField(args[j+1], args[j+1].value, "git clone --separate-git-dir")
			}
			j++
		}
	}
	switch {
	case len(ops) >= 2:
		an.writeField(ops[1], ops[1].value, "git clone")
	case len(ops) == 1 && !ops[0].dynamic:
		u := strings.TrimSuffix(strings.TrimSuffix(ops[0].value, "/"), ".git")
		if b := path.Base(strings.ReplaceAll(u, ":", "/")); b != "" && b != "." && b != "/" {
			an.write(b)
		}
	}
}
