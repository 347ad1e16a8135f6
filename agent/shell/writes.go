package shell

import (
	"path"
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
	"rm":       {},
	"rmdir":    {},
	"unlink":   {},
	"shred":    {valued: "ns", long: []string{"--iterations", "--size", "--random-source"}},
	"touch":    {valued: "dtr", long: []string{"--date", "--reference", "--time"}},
	"mkdir":    {valued: "m", long: []string{"--mode"}},
	"truncate": {valued: "sr", long: []string{"--size", "--reference"}},
	"chmod":    {skipFirst: true, long: []string{"--reference"}},
	"chown":    {skipFirst: true, long: []string{"--reference", "--from"}},
	"chgrp":    {skipFirst: true, long: []string{"--reference"}},
	"tee":      {},
	"mv":       {valued: "tS", long: []string{"--target-directory", "--suffix"}},
	"cp":       {valued: "tS", long: []string{"--target-directory", "--suffix", "--sparse", "--no-preserve"}, lastOnly: true},
	"ln":       {valued: "tS", long: []string{"--target-directory", "--suffix"}, lastOnly: true},
	"install":  {valued: "mogtS", long: []string{"--mode", "--owner", "--group", "--target-directory", "--suffix"}, lastOnly: true},
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
					if _, ok := writers[path.Base(inner[0].value)]; ok || !isReadOnlyName(path.Base(inner[0].value)) {
						an.writesUnknown = true
					}
				}
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
		an.notReadOnly("%s writes %s, a path only known at run time", by, f.source)
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

// sedWrites records the files sed -i edits.
func (an *analyzer) sedWrites(args []field) {
	explicit := false
	scriptSeen := false
	inPlace := false
	var files []field
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.value
		switch {
		case a.dynamic:
			files = append(files, a)
		case v == "-e" || v == "--expression" || v == "-f" || v == "--file" || v == "-l" || v == "--line-length":
			explicit = explicit || v != "-l" && v != "--line-length"
			i++
		case strings.HasPrefix(v, "--expression=") || strings.HasPrefix(v, "--file="):
			explicit = true
		case strings.HasPrefix(v, "--in-place") || v == "-i" || (shortFlag(v, 'i') && !strings.HasPrefix(v, "-e") && !strings.HasPrefix(v, "-f")):
			inPlace = true
			if strings.HasSuffix(v, "e") || strings.HasSuffix(v, "f") {
				explicit = true
				i++
			}
		case strings.HasPrefix(v, "-e") || strings.HasPrefix(v, "-f"):
			explicit = true
		case strings.HasPrefix(v, "-") && v != "-":
			if strings.HasSuffix(v, "e") || strings.HasSuffix(v, "f") {
				explicit = true
				i++
			}
		default:
			if !explicit && !scriptSeen {
				scriptSeen = true
				continue
			}
			files = append(files, a)
		}
	}
	if !inPlace {
		an.writesUnknown = true // sed w or e, which the read-only check refused
		return
	}
	for _, f := range files {
		an.writeField(f, f.value, "sed -i")
	}
}

// tarWrites records tar -c -f archive, and the -C directory of tar -x,
// whose members are unknown.
func (an *analyzer) tarWrites(args []field) {
	create, extract := false, false
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
